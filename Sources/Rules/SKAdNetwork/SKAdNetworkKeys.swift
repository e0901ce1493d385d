/// Apple's public keys for SKAdNetwork postbacks (base64 DER SubjectPublicKeyInfo), as Apple
/// publishes them in "Verifying an install-validation postback" (PROTOCOLS.md §3).
public enum SKAdNetworkKeys {
    /// P-256, versions 2.1 and later. AdAttributionKit's production key
    /// (`apple-cas-identifier/0`) is the same key.
    public static let appleP256 =
        "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEWdp8GPcGqmhgzEFj9Z2nSpQVddayaPe4FMzqM9wib1+aHaaIzoHoLN9zW4K8y4SPykE3YVK3sVqW6Af0lfx3gg=="
    /// P-192, versions 1.0 and 2.0: kept for the record; no library here can check it.
    public static let appleP192 =
        "MEkwEwYHKoZIzj0CAQYIKoZIzj0DAQEDMgAEMyHD625uvsmGq4C43cQ9BnfN2xslVT5V1nOmAMP6qaRRUll3PB1JYmgSm+62sosG"
}
