/// The part of a response head that repeats from one response to the next: status line, `Date`
/// and the handler's own fields. A busy endpoint answers thousands of requests a second with the
/// same status and headers, so the loop keeps the last one written and reuses it until the status,
/// the fields or the second change. Writing it afresh was most of the cost of a response.
struct ResponseHeadStart {
    let status: Int
    let headers: HTTPHeaders
    /// The `Date` second it was written for.
    let second: Int
    /// `HTTP/1.1 201 Created\r\nDate: …\r\n` and every field but the framing ones, which the
    /// connection writes itself.
    let bytes: [UInt8]
    /// The handler asked for the connection to close (`Connection: close`).
    let asksToClose: Bool

    init(status: Int, headers: HTTPHeaders, date: HTTPDate) {
        self.status = status
        self.headers = headers
        second = date.second
        asksToClose = headers.listContains("Connection", token: "close")
        var out: [UInt8] = []
        out.reserveCapacity(128)
        out.append(ascii: "HTTP/1.1 ")
        out.append(decimal: status)
        out.append(UInt8(ascii: " "))
        out.append(utf8: HTTPStatusPhrase.phrase(status))
        out.append(ascii: "\r\nDate: ")
        out.append(utf8: date.imfFixdate)
        out.append(ascii: "\r\n")
        headers.forEachField { name, value in
            guard !Self.isFramingHeader(name) else { return }
            out.append(contentsOf: name)
            out.append(ascii: ": ")
            out.append(contentsOf: value)
            out.append(ascii: "\r\n")
        }
        bytes = out
    }

    func fits(status: Int, headers: HTTPHeaders, date: HTTPDate) -> Bool {
        self.status == status && second == date.second && self.headers.sameFields(as: headers)
    }

    /// Content-Length, Transfer-Encoding and Connection are the server's to write.
    private static func isFramingHeader(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let first = name.first.map(HTTPHeaders.asciiLower), first == UInt8(ascii: "c") || first == UInt8(ascii: "t") else {
            return false
        }
        return equal(name, "Content-Length") || equal(name, "Connection") || equal(name, "Transfer-Encoding")
    }

    private static func equal(_ name: UnsafeBufferPointer<UInt8>, _ framing: StaticString) -> Bool {
        framing.withUTF8Buffer { HTTPHeaders.equalBytes(name, $0) }
    }
}
