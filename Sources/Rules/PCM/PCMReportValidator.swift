import Primitives

/// Turns a request body into a `PCMReport`, or says exactly which field broke which rule.
///
/// Pure: no I/O, no clock. Everything a body alone can prove wrong is checked here; what needs
/// the endpoint's configuration (which sites it serves) is checked by `ReportRole`.
public struct PCMReportValidator: Sendable {
    public let siteRules: SiteRules
    let sites: any SiteChecking
    public let maxDepth: Int

    private let parser: JSONParser

    /// `sites`: how the report's sites are checked; `siteRules` itself unless given (the
    /// endpoint gives a memo in front of it).
    public init(siteRules: SiteRules = SiteRules(), sites: (any SiteChecking)? = nil, maxDepth: Int = 16) {
        self.siteRules = siteRules
        self.sites = sites ?? siteRules
        self.maxDepth = maxDepth
        // Every report repeats these; sharing them saves allocations on the hot path.
        parser = JSONParser(maxDepth: maxDepth, interning: Fields.names + ["click"])
    }

    /// The pre-release WebKit key names and the current names they stand for. Bodies in this form
    /// are normalized (and marked) rather than refused: the browser will not send them again.
    public static let dashKeys: [String: String] = [
        "source-engagement-type": "source_engagement_type",
        "source-site": "source_site",
        "source-id": "source_id",
        "attributed-on-site": "attributed_on_site",
        "trigger-data": "trigger_data",
        "report-version": "version",
    ]

    /// The known fields of one body. A handful of string compares beats hashing every key.
    public struct Fields {
        /// Every field a report may carry, in WebKit's order.
        public static let names = [
            "source_engagement_type", "source_site", "source_id", "attributed_on_site", "trigger_data", "version",
            "source_secret_token", "source_secret_token_signature",
            "destination_secret_token", "destination_secret_token_signature",
        ]
        static let nameBytes = names.map { Array($0.utf8) }
        private var values = [JSONValue?](repeating: nil, count: Fields.names.count)

        /// The slot of a known key. The known keys all differ in length, so the length picks
        /// the one candidate and a single compare confirms it: cheaper than hashing every key.
        public static func slot(_ key: String) -> Int? {
            let i: Int
            switch key.utf8.count {
            case 22: i = 0
            case 11: i = 1
            case 9: i = 2
            case 18: i = 3
            case 12: i = 4
            case 7: i = 5
            case 19: i = 6
            case 29: i = 7
            case 24: i = 8
            case 34: i = 9
            default: return nil
            }
            return key == names[i] ? i : nil
        }

        /// Stores a known field; false for a key the endpoint does not know.
        mutating func set(_ key: String, _ value: JSONValue) -> Bool {
            guard let i = Fields.slot(key) else { return false }
            values[i] = value
            return true
        }

        subscript(name: String) -> JSONValue? {
            Fields.slot(name).flatMap { values[$0] }
        }
    }

    public func validate(body: some Collection<UInt8>) -> Result<PCMReport, ReportRejection> {
        let bytes = body as? [UInt8] ?? Array(body)
        if let report = PCMReportFastPath(sites: sites).read(bytes) { return .success(report) }
        return validateGeneral(body: bytes)
    }

    /// The general path alone: any JSON, every rule, every rejection worded. `validate` tries the
    /// fast path first and falls back to this; tests compare the two.
    public func validateGeneral(body: [UInt8]) -> Result<PCMReport, ReportRejection> {
        let value: JSONValue
        do {
            value = try parser.parse(body)
        } catch {
            switch error.kind {
            case .syntax: return .failure(ReportRejection(.malformedJSON, error.description))
            case .tooDeep: return .failure(ReportRejection(.tooDeep, error.description))
            case .invalidUTF8: return .failure(ReportRejection(.invalidUTF8, error.description))
            case .duplicateKey(let key):
                return .failure(ReportRejection(.duplicateKey, field: key, "the key \"\(key)\" appears more than once"))
            }
        }
        guard case .object(let members) = value else {
            return .failure(ReportRejection(.notAnObject, "the body must be a JSON object; got \(value.typeName)"))
        }
        return validate(members: members)
    }

    public func validate(members rawMembers: [JSONMember]) -> Result<PCMReport, ReportRejection> {
        var fields = Fields()
        var extra: [JSONMember] = []
        for member in rawMembers where !fields.set(member.key, member.value) {
            extra.append(member)
        }
        // Dash-named keys are unknown keys, so only a body with unknown keys can be in that form.
        var usedDashKeys = false
        if extra.contains(where: { Self.dashKeys[$0.key] != nil }) {
            switch normalizeDashKeys(rawMembers) {
            case .success(let (members, _)):
                usedDashKeys = true
                fields = Fields()
                extra = []
                for member in members where !fields.set(member.key, member.value) {
                    extra.append(member)
                }
            case .failure(let rejection):
                return .failure(rejection)
            }
        }

        do throws(ReportRejection) {
            let version = try integer(fields, "version", in: 0...Int.max)
            guard (1...3).contains(version) else {
                throw ReportRejection(.unsupportedVersion, field: "version", "version must be 1, 2 or 3; got \(version)")
            }
            let engagement = try string(fields, "source_engagement_type")
            guard engagement == "click" else {
                throw ReportRejection(.notClick, field: "source_engagement_type",
                                      "source_engagement_type must be \"click\"; got \(quoted(engagement))")
            }
            let sourceID = try integer(fields, "source_id", in: 0...255)
            let triggerData = try integer(fields, "trigger_data", in: 0...15)
            let sourceSite = try site(fields, "source_site")
            let attributedOnSite = try site(fields, "attributed_on_site")
            guard sourceSite != attributedOnSite else {
                throw ReportRejection(.sameSite, field: "attributed_on_site",
                                      "attributed_on_site must differ from source_site; both are \(quoted(sourceSite))")
            }
            let (sourceToken, sourceSignature) = try tokenPair(fields, "source_secret_token", "source_secret_token_signature")
            let (destinationToken, destinationSignature) = try tokenPair(
                fields, "destination_secret_token", "destination_secret_token_signature")
            return .success(PCMReport(
                sourceEngagementType: engagement, sourceSite: sourceSite, sourceID: UInt8(sourceID),
                attributedOnSite: attributedOnSite, triggerData: UInt8(triggerData), version: version,
                sourceSecretToken: sourceToken, sourceSecretTokenSignature: sourceSignature,
                destinationSecretToken: destinationToken, destinationSecretTokenSignature: destinationSignature,
                extraFields: extra, usedDashKeys: usedDashKeys))
        } catch {
            return .failure(error)
        }
    }

    private func normalizeDashKeys(_ members: [JSONMember]) -> Result<([JSONMember], Bool), ReportRejection> {
        let dashKeys = members.filter { Self.dashKeys[$0.key] != nil }
        guard !dashKeys.isEmpty else { return .success((members, false)) }
        if let clash = members.first(where: { Fields.slot($0.key) != nil }) {
            return .failure(ReportRejection(.mixedKeyForms, field: clash.key,
                "the body mixes the pre-release dash-named keys (\(dashKeys[0].key)) with underscore keys (\(clash.key))"))
        }
        let normalized = members.map { JSONMember(key: Self.dashKeys[$0.key] ?? $0.key, value: $0.value) }
        return .success((normalized, true))
    }

    private func require(_ fields: Fields, _ name: String) throws(ReportRejection) -> JSONValue {
        guard let value = fields[name] else {
            throw ReportRejection(.missingField, field: name, "\(name) is required")
        }
        return value
    }

    private func integer(_ fields: Fields, _ name: String, in range: ClosedRange<Int>) throws(ReportRejection) -> Int {
        let value = try require(fields, name)
        // Length first: a 10,000-digit literal is out of range without converting it.
        if case .number(let literal) = value, JSONValue.isIntegerLiteral(literal), literal.utf8.count <= 19,
           let number = Int(literal), range.contains(number) {
            return number
        }
        let rangeText = range.upperBound == Int.max ? "a JSON integer" : "a JSON integer from \(range.lowerBound) to \(range.upperBound)"
        guard case .number(let literal) = value, JSONValue.isIntegerLiteral(literal) else {
            let got: String
            switch value {
            case .number(let literal): got = literal
            case .string(let s): got = "the string \(quoted(s))"
            default: got = value.typeName
            }
            throw ReportRejection(.wrongType, field: name, "\(name) must be \(rangeText); got \(got)")
        }
        let shown = literal.utf8.count > 24 ? String(literal.prefix(20)) + "… (\(literal.utf8.count) digits)" : literal
        throw ReportRejection(.outOfRange, field: name, "\(name) must be \(rangeText); got \(shown)")
    }

    private func string(_ fields: Fields, _ name: String) throws(ReportRejection) -> String {
        let value = try require(fields, name)
        guard case .string(let s) = value else {
            throw ReportRejection(.wrongType, field: name, "\(name) must be a string; got \(value.typeName)")
        }
        return s
    }

    private func site(_ fields: Fields, _ name: String) throws(ReportRejection) -> String {
        let value = try string(fields, name)
        if let violation = sites.check(value) {
            throw ReportRejection(.notRegistrableDomain, field: name, "\(name) \(quoted(value)) \(violation.detail)")
        }
        return value
    }

    /// `x_secret_token` and `x_secret_token_signature` come together or not at all.
    private func tokenPair(_ fields: Fields, _ tokenName: String, _ signatureName: String) throws(ReportRejection) -> (String?, String?) {
        switch (fields[tokenName], fields[signatureName]) {
        case (nil, nil): return (nil, nil)
        case (nil, .some): throw ReportRejection(.unpairedToken, field: tokenName, "\(signatureName) is present but \(tokenName) is not")
        case (.some, nil): throw ReportRejection(.unpairedToken, field: signatureName, "\(tokenName) is present but \(signatureName) is not")
        case (.some, .some):
            let token = try string(fields, tokenName)
            let signature = try string(fields, signatureName)
            for (name, text) in [(tokenName, token), (signatureName, signature)] where !Base64URL.isValidUnpadded(text) {
                throw ReportRejection(.invalidBase64URL, field: name, "\(name) must be non-empty base64url without padding")
            }
            return (token, signature)
        }
    }

    private func quoted(_ s: String) -> String {
        var out = ""
        JSONValue.writeString(s.count > 80 ? String(s.prefix(80)) + "…" : s, to: &out)
        return out
    }
}
