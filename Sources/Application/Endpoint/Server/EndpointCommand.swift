import CSystemShims
import Dispatch
import Foundation
import HTTPServer
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `attribution-endpoint [options]`: parse, start, run until SIGINT or SIGTERM, stop cleanly.
public enum EndpointCommand {
    public static func main(arguments: [String], environment: [String: String]) -> Int32 {
        // SIGHUP's default is to end the process: a reload sent while the start reads a long log
        // (systemd accepts one as soon as the process runs) is kept, and done once it listens.
        let hangups = Hangups(reload: {
            // The same command line and environment, over the config file as it is now.
            guard case .run(let configuration) = try EndpointConfiguration.parse(arguments: arguments, environment: environment) else {
                throw EndpointConfiguration.ParseError(description: "--help is no configuration")
            }
            return configuration
        })
        let configuration: EndpointConfiguration
        do {
            switch try EndpointConfiguration.parse(arguments: arguments, environment: environment) {
            case .help:
                print(EndpointConfiguration.helpText)
                return 0
            case .run(let parsed):
                configuration = parsed
            }
        } catch {
            FileHandle.standardError.write(Data("attribution-endpoint: \(error)\n".utf8))
            return 64  // EX_USAGE
        }
        // A start's large buffers (the postback window's index, a day of Apple Ads tokens) go
        // back to the kernel once freed, instead of staying in the heap (docs/DEPLOYMENT.md).
        c_system_shims_return_large_frees()
        if configuration.adminTokenOnCommandLine {
            EventLog.write("warning", ["warning": .string("token_on_command_line"),
                                       "detail": .string("--token puts the admin token in the process list, where every user of this machine can read it; use --token-file FILE (0600) or \(EndpointConfiguration.environmentTokenName)")])
        }
        let server: EndpointServer
        do {
            server = try EndpointServer(configuration: configuration)
            try server.start()
        } catch {
            FileHandle.standardError.write(Data("attribution-endpoint: cannot start: \(error)\n".utf8))
            return 1
        }
        hangups.serve(server)
        let code = serveUntilSignalled(server)
        hangups.cancel()
        return code
    }

    /// Runs until SIGINT or SIGTERM, then stops cleanly; the process's exit code.
    public static func serveUntilSignalled(_ server: EndpointServer) -> Int32 {
        // Signals are taken as dispatch events, not handlers, so shutdown runs as ordinary code.
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        let sources = [SIGINT, SIGTERM].map { number -> DispatchSourceSignal in
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                EventLog.write("shutdown", ["signal": .number(String(number))])
                server.shutdown()
            }
            source.resume()
            return source
        }
        server.waitUntilStopped()
        sources.forEach { $0.cancel() }
        // The last lines get a moment to reach a slow reader; a stuck one does not hold the exit.
        LineWriter.standardError.close(waitingAtMost: 2)
        return 0
    }
}

/// SIGHUP, from the command's first moment: a reload asked for before the server listens is
/// kept and done once it does. On a serial queue of its own: reloads follow one another, and
/// never hold the event loop.
private final class Hangups: @unchecked Sendable {
    private enum State {
        case starting(pending: Bool)
        case serving(EndpointServer)
    }

    private let queue = DispatchQueue(label: "reload")
    private let source: DispatchSourceSignal
    /// Touched on `queue` only.
    private var state = State.starting(pending: false)

    init(reload: @escaping @Sendable () throws -> EndpointConfiguration) {
        self.reload = reload
        signal(SIGHUP, SIG_IGN)
        source = DispatchSource.makeSignalSource(signal: SIGHUP, queue: queue)
        source.setEventHandler { [unowned self] in
            switch state {
            case .starting: state = .starting(pending: true)
            case .serving(let server): server.reload(reload)
            }
        }
        source.resume()
    }

    private let reload: @Sendable () throws -> EndpointConfiguration

    /// From now on a SIGHUP reloads `server`; one that came during the start reloads it now.
    func serve(_ server: EndpointServer) {
        queue.sync {
            if case .starting(pending: true) = state { server.reload(reload) }
            state = .serving(server)
        }
    }

    func cancel() { source.cancel() }
}
