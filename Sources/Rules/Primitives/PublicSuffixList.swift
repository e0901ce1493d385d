import Foundation

/// The Public Suffix List: which names are public suffixes (`com`, `co.uk`, `github.io`), and so
/// what a name's registrable domain (eTLD+1) is.
///
/// Both the ICANN and the private sections are used, as browsers do when they compute the
/// "site" that goes into a report. The list ships as a resource (`public_suffix_list.dat`,
/// MPL-2.0, from Debian's `publicsuffix` package); see `docs/THIRD_PARTY.md`.
public struct PublicSuffixList: Sendable {
    private var rules: Set<String> = []
    /// `*.ck` is stored as `ck`: any one label under it is a public suffix.
    private var wildcards: Set<String> = []
    /// `!www.ck` is stored as `www.ck`: an exception to a wildcard.
    private var exceptions: Set<String> = []

    /// Parses the list's text format. Unicode rules are stored in their `xn--` form.
    public init(text: String) {
        for rawLine in text.split(whereSeparator: \.isNewline) {
            let line = rawLine.split(whereSeparator: { $0 == " " || $0 == "\t" }).first.map(String.init) ?? ""
            if line.isEmpty || line.hasPrefix("//") { continue }
            if line.hasPrefix("!") {
                if let ascii = Punycode.toASCII(domain: String(line.dropFirst())) { exceptions.insert(ascii) }
            } else if line.hasPrefix("*.") {
                if let ascii = Punycode.toASCII(domain: String(line.dropFirst(2))) { wildcards.insert(ascii) }
            } else if let ascii = Punycode.toASCII(domain: line) {
                rules.insert(ascii)
            }
        }
    }

    /// The list shipped with the endpoint, loaded once.
    public static let shipped: PublicSuffixList = {
        guard let url = Bundle.module.url(forResource: "public_suffix_list", withExtension: "dat"),
              let text = try? String(contentsOf: url, encoding: .utf8) else {
            fatalError("public_suffix_list.dat is missing from the Primitives resources")
        }
        return PublicSuffixList(text: text)
    }()

    /// The public suffix of an ASCII, lowercase host name without a trailing dot.
    public func publicSuffix(of host: String) -> Substring {
        let labelStarts = Self.labelStarts(host)
        for (i, start) in labelStarts.enumerated() {
            let candidate = host[start...]
            if exceptions.contains(String(candidate)) {
                // An exception rule's public suffix is the rule minus its leftmost label.
                return i + 1 < labelStarts.count ? host[labelStarts[i + 1]...] : candidate
            }
            if rules.contains(String(candidate)) { return candidate }
            if i + 1 < labelStarts.count, wildcards.contains(String(host[labelStarts[i + 1]...])) { return candidate }
        }
        // The implicit rule "*": an unlisted TLD is a public suffix.
        return host[labelStarts[labelStarts.count - 1]...]
    }

    /// The registrable domain (public suffix plus one label), or nil when the host is itself a
    /// public suffix.
    public func registrableDomain(of host: String) -> Substring? {
        let suffix = publicSuffix(of: host)
        guard suffix.startIndex > host.startIndex else { return nil }
        // Walk left past the dot to the start of the preceding label.
        var start = host.index(before: suffix.startIndex)
        while start > host.startIndex, host[host.index(before: start)] != "." {
            start = host.index(before: start)
        }
        return host[start...]
    }

    private static func labelStarts(_ host: String) -> [String.Index] {
        var starts = [host.startIndex]
        var i = host.startIndex
        while i < host.endIndex {
            if host[i] == "." { starts.append(host.index(after: i)) }
            i = host.index(after: i)
        }
        return starts
    }
}
