/// The keys an AdAttributionKit postback may name in its JWS `kid`. Apple publishes a fixed list
/// and no key URL (PROTOCOLS.md §4); a `kid` not in it is never looked up anywhere.
public enum AdAttributionKitKeys {
    public struct Key: Sendable, Equatable {
        public var kid: String
        /// Base64 DER SubjectPublicKeyInfo, P-256.
        public var subjectPublicKeyInfo: String
        /// Signed for development flows, never by a real install: not counted in production.
        public var isDevelopment: Bool
    }

    public static let production = Key(
        kid: "apple-cas-identifier/0",
        subjectPublicKeyInfo: "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEWdp8GPcGqmhgzEFj9Z2nSpQVddayaPe4FMzqM9wib1+aHaaIzoHoLN9zW4K8y4SPykE3YVK3sVqW6Af0lfx3gg==",
        isDevelopment: false)

    public static let all: [Key] = [
        production,
        // End-to-end development flows.
        Key(kid: "apple-development-identifier/0",
            subjectPublicKeyInfo: "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAELeEDzpJEP+/qRSE5hJVC1p1J0ssUnQGMzBBbvnACBok8OVGGLgxL0myrKiy6lvRtSlLRsWit87i+vftD8AEqeQ==",
            isDevelopment: true),
        // Postbacks made from a device's Developer settings.
        Key(kid: "apple-development-identifier/1",
            subjectPublicKeyInfo: "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE8YzdO7eM97s/IJ25kdW5CZ3A14USE5IJ5Ha/vhWaxI6UBI1ZxCEvjrKxVluVGe6qWwF1BDFq+QHqKfH5u+wxHQ==",
            isDevelopment: true),
    ]

    public static func key(kid: String) -> Key? {
        all.first { $0.kid == kid }
    }
}
