#if os(Linux)
import CSystemShims
import Foundation
import FoundationNetworking
import Testing

/// The URL host check the executable puts in place of Foundation's leaking one: it must answer
/// what Foundation's answers, or every call to Apple's API would be refused as a bad URL.
@Suite struct URLHostCheckTests {
    @Test(arguments: [
        ("https://api-adservices.apple.com/api/v1/", "api-adservices.apple.com", true),
        ("http://127.0.0.1:8123/?query=1", "127.0.0.1", true),
        ("http://[::1]:8080/", "::1", true),
        ("http://APP.example/", "APP.example", true),
        ("https://api-adservices.apple.com/api/v1/", "apple.com", false),
        ("https://api-adservices.apple.com.evil.example/", "api-adservices.apple.com", false),
        ("http://[::1]/", "[::1]", false),
        ("not a url", "", false),
    ])
    func answersAsFoundationDoes(url: String, host: String, equal: Bool) {
        // Foundation's networking is loaded (as the endpoint's Apple Ads client loads it), so the
        // check finds libcurl's URL API, as it does in the endpoint.
        _ = URLSession.shared
        #expect(CFURLSessionCurlHostIsEqual(url, host) == equal, "\(url) \(host)")
    }
}
#endif
