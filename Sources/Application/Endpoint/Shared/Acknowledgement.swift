import HTTPServer
import Primitives

/// The answer to a stored record, `{"id":7,…}`, written as bytes: every report and every postback
/// is answered with one, so it is built from constants rather than through a JSON encoder.
struct Acknowledgement {
    private var json: [UInt8] = []

    init(id: UInt64) {
        json.reserveCapacity(128)
        json.append(ascii: #"{"id":"#)
        json.append(decimal: Int(id))
    }

    /// A constant piece, commas and quotes included: `,"retry":true`.
    mutating func append(_ constant: StaticString) {
        json.append(ascii: constant)
    }

    /// `,"received_at":"2026-11-20T10:00:00.123Z"`
    mutating func appendReceivedAt(_ time: Timestamp) {
        json.append(ascii: #","received_at":""#)
        time.appendRFC3339(to: &json)
        json.append(UInt8(ascii: "\""))
    }

    /// `,"name":"value"` for a value of the endpoint's own words (a verdict, a signature outcome).
    mutating func append(name: StaticString, word: String) {
        json.append(ascii: name)
        json.append(utf8: word)
        json.append(UInt8(ascii: "\""))
    }

    /// `,"reasons":[…]`. Reasons are the endpoint's own snake_case words, written as they are;
    /// anything else is escaped.
    mutating func appendReasons(_ reasons: [String]) {
        json.append(ascii: #","reasons":["#)
        for (i, reason) in reasons.enumerated() {
            if i > 0 { json.append(UInt8(ascii: ",")) }
            if reason.utf8.allSatisfy({ ($0 >= 97 && $0 <= 122) || $0 == 95 || ($0 >= 48 && $0 <= 57) }) {
                json.append(UInt8(ascii: "\""))
                json.append(utf8: reason)
                json.append(UInt8(ascii: "\""))
            } else {
                var quoted = ""
                JSONValue.writeString(reason, to: &quoted)
                json.append(utf8: quoted)
            }
        }
        json.append(UInt8(ascii: "]"))
    }

    consuming func response(status: Int) -> HTTPResponse {
        json.append(ascii: "}\n")
        return HTTPResponse(status: status, headers: JSONResponse.headers, body: json)
    }
}
