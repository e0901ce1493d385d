import HTTPServer
import Primitives

/// A surface's routes: built from the one context every surface shares, plus the surface's own
/// state. What the context holds reads as the surface's own.
protocol SurfaceRoutes: Sendable {
    var context: HandlerContext { get }
}

extension SurfaceRoutes {
    var scope: ScopeOf { context.scope }
    var workers: WorkerPool? { context.reads }
    var cluster: ClusterScope? { context.cluster }
    var recordsKeptFrom: @Sendable () -> Timestamp? { context.recordsKeptFrom }
    var now: Timestamp { context.clock() }
}
