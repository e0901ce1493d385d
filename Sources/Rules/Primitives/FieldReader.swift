/// Reads a JSON object's fields by their wire names and notes every rule a field breaks, in
/// snake_case (`conversion_value_out_of_range`), instead of stopping at the first: a postback that
/// breaks a rule is still stored, quarantined with all its reasons.
public struct FieldReader: Sendable {
    public let members: [JSONMember]
    public private(set) var reasons: [String] = []

    public init(_ members: [JSONMember]) {
        self.members = members
    }

    public func value(_ key: String) -> JSONValue? {
        // Lengths first: comparing two long Strings that are not the same object costs far more
        // than comparing their byte counts, and most keys differ in length.
        let length = key.utf8.count
        return members.first { $0.key.utf8.count == length && $0.key == key }?.value
    }

    public func has(_ key: String) -> Bool { value(key) != nil }

    /// Notes a reason once.
    public mutating func note(_ reason: String) {
        if !reasons.contains(reason) { reasons.append(reason) }
    }

    /// `ad-network-id` → `ad_network_id`: reasons are snake_case words.
    public static func reasonName(_ key: String) -> String {
        String(key.map { $0 == "-" ? "_" : $0 })
    }

    /// A string field; a value of another type is noted as `<field>_not_a_string`.
    public mutating func string(_ key: String, required: Bool = false) -> String? {
        switch value(key) {
        case .string(let s): return s
        case nil: if required { note(Self.reasonName(key) + "_missing") }
        case .some: note(Self.reasonName(key) + "_not_a_string")
        }
        return nil
    }

    /// An integer field, in `range` if given. Only an integer literal counts: `42.0`, `"42"` and
    /// a number past 64 bits are noted, never rounded.
    public mutating func integer(_ key: String, in range: ClosedRange<Int>? = nil, required: Bool = false) -> Int? {
        switch value(key) {
        case .number(let text):
            guard let n = JSONValue.integerValue(text) else {
                note(Self.reasonName(key) + "_not_an_integer")
                return nil
            }
            if let range, !range.contains(n) {
                note(Self.reasonName(key) + "_out_of_range")
                return nil
            }
            return n
        case nil: if required { note(Self.reasonName(key) + "_missing") }
        case .some: note(Self.reasonName(key) + "_not_an_integer")
        }
        return nil
    }

    /// A boolean field.
    public mutating func bool(_ key: String, required: Bool = false) -> Bool? {
        switch value(key) {
        case .bool(let b): return b
        case nil: if required { note(Self.reasonName(key) + "_missing") }
        case .some: note(Self.reasonName(key) + "_not_a_boolean")
        }
        return nil
    }

    /// One of `allowed`, exactly as written.
    public mutating func word(_ key: String, of allowed: [String], required: Bool = false) -> String? {
        guard let s = string(key, required: required) else { return nil }
        guard allowed.contains(s) else {
            note(Self.reasonName(key) + "_invalid")
            return nil
        }
        return s
    }

    /// A string of `digits` ASCII digits (a source identifier: 2, 3 or 4).
    public mutating func digits(_ key: String, count allowed: ClosedRange<Int>, required: Bool = false) -> String? {
        guard let s = string(key, required: required) else { return nil }
        guard allowed.contains(s.utf8.count), s.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else {
            note(Self.reasonName(key) + "_invalid")
            return nil
        }
        return s
    }

    /// The text a signature covers for this field: a string's content, a number as written, or
    /// `true`/`false`; nil when the field is absent (or a container, which no signature covers).
    public func signedText(_ key: String) -> String? {
        switch value(key) {
        case .string(let s): s
        case .number(let text): text
        case .bool(let b): b ? "true" : "false"
        case .null, .array, .object, nil: nil
        }
    }
}
