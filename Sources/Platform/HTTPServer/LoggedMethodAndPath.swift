/// The method and path of an access-log line, as JSON members: `"method":"POST","path":"/…"`.
/// The query is left out: it may carry what the log must not keep.
struct LoggedMethodAndPath {
    let method: String
    let target: String
    let json: [UInt8]

    init(method: String, target: String) {
        self.method = method
        self.target = target
        var json: [UInt8] = []
        json.append(ascii: "\"method\":")
        appendJSONString(method, to: &json)
        json.append(ascii: ",\"path\":")
        var target = target
        target.withUTF8 { bytes in
            let end = bytes.firstIndex(of: UInt8(ascii: "?")) ?? bytes.count
            appendJSONString(UnsafeBufferPointer(rebasing: bytes[..<end]), to: &json)
        }
        self.json = json
    }
}
