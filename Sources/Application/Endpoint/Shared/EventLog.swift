import Primitives
import HTTPServer

/// Structured lines on stderr for things that are not requests: start, replay, failures, stop.
enum EventLog {
    static func write(_ event: String, _ fields: [(String, JSONValue)] = []) {
        // Through the shared writer, never straight to stderr: a stalled reader must not stop a
        // signal handler, a failure report or the shutdown.
        LineWriter.standardError.writeLine(line(event, fields))
    }

    /// The event's line, for a command that prints it itself (and exits before a writer would).
    static func line(_ event: String, _ fields: [(String, JSONValue)]) -> String {
        var line = "{\"time\":\"\(EndpointClock.systemNow().rfc3339)\",\"event\":"
        JSONValue.writeString(event, to: &line)
        for (key, value) in fields {
            line += ","
            JSONValue.writeString(key, to: &line)
            line += ":"
            value.write(to: &line)
        }
        line += "}"
        return line
    }

    static func write(_ event: String, _ fields: KeyValuePairs<String, JSONValue>) {
        write(event, fields.map { ($0.key, $0.value) })
    }
}
