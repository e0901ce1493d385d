import HTTPServer
import Marketers
import Primitives

/// `GET /api/overview?advertiser=&from=&to=&scope=`: the page's first view (`Overview`). A viewer
/// token scoped to an advertiser sees that advertiser's alone; the admin token names one, or sees
/// every site together. `scope=cluster`: every node's, counted in ClickHouse as each view's is.
struct OverviewRoutes: SurfaceRoutes {
    let context: HandlerContext
    let summary: SummaryStore
    let aggregates: AppsAggregates
    let rebuild: PostbackRebuild
    let appleAds: AppleAdsOutbox
    let apps: AppRegistryStore
    let access: AccessControl
    /// Looked-up Apple Ads names (`--apple-ads-platform`), beside the typed ones.
    var names: AppleAdsNames? = nil

    func routes(bearer gate: @escaping RouteGroup.Gate) -> [RouteGroup] {
        [RouteGroup("overview", gate: gate, routes: [Route(.exact("/api/overview"), methods: ["GET", "HEAD"], workers: workers, handler: overview)])]
    }

    func overview(_ request: HTTPRequest, _ responder: HTTPResponder) throws {
        let (scope, rest) = try ClusterScope.split(request.queryItems)
        var items: [(name: String, value: String)] = []
        for item in rest {
            switch item.name {
            case "advertiser": continue
            case "from", "to": items.append(item)
            default:
                throw Problem(status: 400, rule: "unknown_parameter", field: item.name,
                              detail: "unknown query parameter \"\(item.name)\"; use advertiser, from, to and scope")
            }
        }
        let period = try SummaryQuery.parse(items, today: SummaryAggregates.day(of: now)).get()
        let readable = try access.readScope(request)
        let advertiser = readable.advertiser
        let readableSites = readable.sites
        var overview = Overview(advertiser: advertiser, from: period.from, to: period.to)
        let registry = apps.registry.scoped(to: readableSites)
        let pcm = SummaryQuery(site: nil, from: period.from, to: period.to, role: nil, readableSites: readableSites)
        let appsQuery = AppsSummary.Query(site: nil, from: period.from, to: period.to, readableSites: readableSites)

        if scope == .cluster {
            guard let cluster else { throw ClusterScope.unavailable }
            let withoutChannels = overview
            return cluster.answer(responder) {
                var overview = withoutChannels
                overview.cluster = true
                overview.nodes = ClusterNodes.json(cluster)
                overview.channels.append(Overview.web(SummaryReport(try ClusterSummary.aggregates(cluster, from: period.from, to: period.to), pcm)))
                let postbacks = try ClusterAppsSummary.summary(cluster, query: appsQuery, registry: registry)
                overview.channels += Overview.apps(postbacks, query: appsQuery, registry: registry)
                overview.channels.append(Overview.appleAds(try ClusterAppleAdsSummary.summary(cluster, query: appsQuery), postbacks: postbacks,
                                                           query: appsQuery, naming: AppleAdsNaming(registry: registry, lookedUp: names)))
                return JSONResponse.make(200, overview.json())
            }
        }
        switch summary.read({ SummaryReport($0, pcm) }) {
        case .success(let report): overview.channels.append(Overview.web(report))
        case .failure(let progress):
            var channel = Overview.Channel(id: "web", name: "Web conversions", source: "Private Click Measurement reports")
            channel.unavailable = "the summary is being rebuilt from the log after a start (\(Int(progress.fraction * 100)) % done)"
            overview.channels.append(channel)
        }
        var postbacks: AppsSummary?
        if (try? rebuild.requireReady("the overview")) != nil {
            postbacks = aggregates.summary(appsQuery, registry: registry)
            overview.channels += Overview.apps(postbacks!, query: appsQuery, registry: registry)
        } else {
            for (id, name) in [("app_installs", "App installs"), ("re_engagements", "Re-engagements")] {
                var channel = Overview.Channel(id: id, name: name, source: "SKAdNetwork and AdAttributionKit postbacks")
                channel.unavailable = "the postbacks are being read again from the log after a start"
                overview.channels.append(channel)
            }
        }
        if (try? appleAds.requireReady()) != nil {
            overview.channels.append(Overview.appleAds(appleAds.summary(appsQuery), postbacks: postbacks, query: appsQuery,
                                                       naming: AppleAdsNaming(registry: registry, lookedUp: names)))
        } else {
            var channel = Overview.Channel(id: "apple_ads", name: "Apple Ads attributed installs", source: "Apple Ads tokens")
            channel.unavailable = "the Apple Ads tokens are being read again from the log after a start"
            overview.channels.append(channel)
        }
        overview.clusterAvailable = cluster != nil
        responder.respond(JSONResponse.make(200, overview.json()))
    }
}
