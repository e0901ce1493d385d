import Crypto

/// The first 64 bits of SHA-256: a fingerprint that is the same in every process, so that it can
/// be kept on disk (the token sets' digests), and that nobody can aim at another value.
public enum Fingerprint {
    public static func sha256Prefix(_ parts: [UInt8]...) -> UInt64 {
        var hash = SHA256()
        for part in parts { hash.update(data: part) }
        return hash.finalize().withUnsafeBytes { bytes in
            bytes.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        }
    }

    /// The whole SHA-256 of `bytes`: what a viewer token is kept as.
    public static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        Array(SHA256.hash(data: bytes))
    }
}
