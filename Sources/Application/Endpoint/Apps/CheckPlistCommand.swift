import AppConfiguration
import Foundation

/// `attribution-endpoint check-plist Info.plist [--site SITE]… [--config FILE] [--json]`:
/// the app developer's Info.plist checked as the device reads it, before the app ships; the
/// device never says when it ignores a key.
public enum CheckPlistCommand {
    static let usage = """
        usage: attribution-endpoint check-plist Info.plist [--site SITE]... [--config FILE] [--json]

        Checks AdAttributionKitConfigurations (attribution windows, cooldowns), the endpoint keys
        NSAdvertisingAttributionReportEndpoint and AttributionCopyEndpoint, the re-engagement copies
        opt-in and SKAdNetworkItems of an XML or binary Info.plist, and prints the windows and
        cooldowns the device will use. With --site or --config (the endpoint's own), it also
        checks that the endpoint keys name a site this endpoint serves.
        Exit status: 0 no errors, 1 errors found, 65 not a property list, 64 usage.
        """ + EndpointConfiguration.sharedOptionsHelp(["--site", "--config"])

    public static func main(arguments: [String], environment: [String: String]) -> Int32 {
        var path: String?, sites: [String] = [], json = false
        var configuration = EndpointConfiguration()
        var i = 0
        func value() -> String? { i += 1; return i < arguments.count ? arguments[i] : nil }
        while i < arguments.count {
            switch arguments[i] {
            case "--help", "-h": print(usage); return 0
            case "--json": json = true
            case "--site":
                guard let site = value() else { return fail("--site needs a site") }
                sites.append(site)
            case "--config":
                guard let file = value() else { return fail("--config needs a file") }
                do { try configuration.apply(configFile: file) } catch { return fail("\(error)") }
            case let word where !word.hasPrefix("-") && path == nil: path = word
            default: return fail("unknown argument '\(arguments[i])'")
            }
            i += 1
        }
        guard let path else { return fail("name the Info.plist to check") }
        guard let data = FileManager.default.contents(atPath: path) else { return fail("cannot read \(path)") }
        let served = sites + configuration.sites
        do throws(PropertyList.NotAPropertyList) {
            let report = try InfoPlistCheck(servedSites: served.isEmpty ? nil : Set(served)).check(bytes: Array(data))
            print(json ? report.json : report.text, terminator: json ? "\n" : "")
            return report.errors == 0 ? 0 : 1
        } catch {
            FileHandle.standardError.write(Data("attribution-endpoint check-plist: \(path) \(error.detail)\n".utf8))
            return 65
        }
    }

    private static func fail(_ message: String) -> Int32 {
        FileHandle.standardError.write(Data("attribution-endpoint check-plist: \(message)\n\(usage)\n".utf8))
        return 64
    }
}
