import Foundation
import Primitives

/// One thing the endpoint can be told, declared once: its flag, its config-file key, its help,
/// and how a value is read and checked. `--help`, the command-line parser, the config-file
/// reader and `EndpointConfiguration.check()` all come from `EndpointConfiguration.options`.
///
/// The default is the configuration's own (`EndpointConfiguration()`), so the help shows it
/// without a second copy; the allowed range is declared here and nowhere else.
struct EndpointOption {
    /// `--max-connections`; nil for what only the config file takes (the registrations).
    var flag: String?
    /// `max_connections`; nil for what only the command line takes (`--config`, `--token`, `--help`).
    var key: String?
    /// `N`, `SECS`, `DIR`…; nil for a switch, which takes no value.
    var placeholder: String?
    var help: String
    /// The default and the range, as the help shows them ("default 4096; 1 to 1000000").
    var bounds: String?
    /// What a switch sets, as the config file writes it (`true`, or `false` for `--no-page`).
    var switchValue = true
    /// Reads the command line's value (nil for a switch); `first` is true on the flag's first
    /// occurrence, where a repeated flag's list replaces the file's. Returns why the value cannot
    /// be taken.
    var fromArgument: (inout EndpointConfiguration, _ value: String?, _ first: Bool) -> String? = { _, _, _ in nil }
    /// Reads the config file's value; returns why it cannot be taken.
    var fromFile: (inout EndpointConfiguration, Any) -> String? = { _, _ in "is not a config-file key" }
    /// Why the configured value is refused, if it is: out of range, or not what it must be.
    var check: (EndpointConfiguration) -> String? = { _ in nil }
    /// The value as text, for telling what a reload changed.
    var value: (EndpointConfiguration) -> String = { _ in "" }
    /// What a reload (SIGHUP) does with a changed value: applies it, or says it needs a restart and why.
    var reload: Reload = .restart("read once, at start")

    enum Reload {
        case live
        case restart(String)
    }

    /// This option, applied by a reload.
    func live() -> EndpointOption {
        var copy = self
        copy.reload = .live
        return copy
    }

    /// This option, which a reload cannot apply, and why.
    func restart(_ reason: String) -> EndpointOption {
        var copy = self
        copy.reload = .restart(reason)
        return copy
    }

    /// How the option is named in a message: its flag and its key, as either may have set it.
    var name: String {
        switch (flag, key) {
        case (let flag?, let key?): "\(flag) (\"\(key)\" in the config file)"
        case (let flag?, nil): flag
        default: "\"\(key ?? "")\""
        }
    }
}

// MARK: - The kinds of option

extension EndpointOption {
    typealias Configuration = EndpointConfiguration

    /// A whole number within `range`.
    static func integer<T: FixedWidthInteger & Sendable>(_ flag: String, _ key: String, _ path: WritableKeyPath<Configuration, T>,
                                                         _ range: ClosedRange<T>, placeholder: String = "N", _ help: String) -> EndpointOption {
        ranged(flag, key, range, placeholder: placeholder, help, default: Configuration()[keyPath: path], shown: { "\($0)" },
               parse: { T($0) }, read: { ($0 as? Int).map { T(exactly: $0) } }, get: { $0[keyPath: path] },
               set: { $0[keyPath: path] = $1 })
    }

    /// A whole number within `range`, or unset (the default: the help says what that means).
    static func integer<T: FixedWidthInteger & Sendable>(_ flag: String, _ key: String, _ path: WritableKeyPath<Configuration, T?>,
                                                         _ range: ClosedRange<T>, placeholder: String = "N", _ help: String) -> EndpointOption {
        ranged(flag, key, range, placeholder: placeholder, help, default: nil, shown: { "\($0)" },
               parse: { T($0) }, read: { ($0 as? Int).map { T(exactly: $0) } }, get: { $0[keyPath: path] },
               set: { $0[keyPath: path] = $1 })
    }

    /// A number of seconds (or days…) within `range`.
    static func number(_ flag: String, _ key: String, _ path: WritableKeyPath<Configuration, Double>, _ range: ClosedRange<Double>,
                       placeholder: String = "SECS", _ help: String) -> EndpointOption {
        ranged(flag, key, range, placeholder: placeholder, help, default: Configuration()[keyPath: path], shown: Self.shown,
               parse: { Double($0) }, read: { ($0 as? Double).map { $0 } }, get: { $0[keyPath: path] },
               set: { $0[keyPath: path] = $1 })
    }

    /// A value within `range`: `parse` reads the command line's text, `read` the file's JSON (nil:
    /// not the right type; nil inside: the right type but no such value of `T`).
    private static func ranged<T: Comparable>(_ flag: String, _ key: String, _ range: ClosedRange<T>, placeholder: String,
                                              _ help: String, default value: T?, shown: @escaping (T) -> String,
                                              parse: @escaping (String) -> T?, read: @escaping (Any) -> T??,
                                              get: @escaping (Configuration) -> T?,
                                              set: @escaping (inout Configuration, T) -> Void) -> EndpointOption {
        let allowed = "\(shown(range.lowerBound)) to \(shown(range.upperBound))"
        let kind = T.self is any FixedWidthInteger.Type ? "a whole number" : "a number"
        return EndpointOption(flag: flag, key: key, placeholder: placeholder, help: help,
            bounds: value.map { "default \(shown($0)); \(allowed)" } ?? allowed,
            fromArgument: { configuration, text, _ in
                guard let text, let parsed = parse(text) else { return "'\(text ?? "")' is not \(kind) from \(allowed)" }
                set(&configuration, parsed)
                return nil
            },
            fromFile: { configuration, any in
                guard let given = read(any) else { return "must be \(kind)" }
                guard let parsed = given else { return "must be \(allowed)" }
                set(&configuration, parsed)
                return nil
            },
            check: { configuration in
                guard let current = get(configuration) else { return nil }
                return range.contains(current) ? nil : "must be \(allowed); it is \(shown(current))"
            },
            value: { get($0).map(shown) ?? "unset" })
    }

    /// Text, taken as it is; `check` says what it must be.
    static func text(_ flag: String, _ key: String?, _ path: WritableKeyPath<Configuration, String>, placeholder: String,
                     _ help: String, check: @escaping (Configuration) -> String? = { _ in nil }) -> EndpointOption {
        textual(flag, key, placeholder: placeholder, help, bounds: "default \(Configuration()[keyPath: path])", check: check,
                value: { $0[keyPath: path] }) { $0[keyPath: path] = $1 }
    }

    /// Text that may be left unset.
    static func optionalText(_ flag: String, _ key: String?, _ path: WritableKeyPath<Configuration, String?>, placeholder: String,
                             _ help: String, check: @escaping @Sendable (Configuration) -> String? = { _ in nil }) -> EndpointOption {
        textual(flag, key, placeholder: placeholder, help, bounds: nil, check: check,
                value: { $0[keyPath: path] ?? "unset" }) { $0[keyPath: path] = $1 }
    }

    private static func textual(_ flag: String, _ key: String?, placeholder: String, _ help: String, bounds: String?,
                                check: @escaping (Configuration) -> String?, value: @escaping (Configuration) -> String,
                                set: @escaping (inout Configuration, String) -> Void) -> EndpointOption {
        EndpointOption(flag: flag, key: key, placeholder: placeholder, help: help, bounds: bounds,
            fromArgument: { configuration, text, _ in
                set(&configuration, text ?? "")
                return nil
            },
            fromFile: { configuration, any in
                guard let value = any as? String else { return "must be a string" }
                set(&configuration, value)
                return nil
            },
            check: check, value: value)
    }

    /// A switch: the flag sets `path` to `value`; the file's key gives the value itself.
    static func toggle(_ flag: String, _ key: String, _ path: WritableKeyPath<Configuration, Bool>, setTo value: Bool = true,
                       _ help: String) -> EndpointOption {
        EndpointOption(flag: flag, key: key, placeholder: nil, help: help, switchValue: value,
            fromArgument: { configuration, _, _ in
                configuration[keyPath: path] = value
                return nil
            },
            fromFile: { configuration, any in
                guard let given = any as? Bool else { return "must be true or false" }
                configuration[keyPath: path] = given
                return nil
            },
            value: { "\($0[keyPath: path])" })
    }

    /// A list: the flag is repeated, the file gives an array.
    static func list(_ flag: String, _ key: String, _ path: WritableKeyPath<Configuration, [String]>, placeholder: String,
                     _ help: String, check: @escaping (Configuration) -> String? = { _ in nil }) -> EndpointOption {
        EndpointOption(flag: flag, key: key, placeholder: placeholder, help: help,
            fromArgument: { configuration, text, first in
                if first { configuration[keyPath: path] = [] }
                configuration[keyPath: path].append(text ?? "")
                return nil
            },
            fromFile: { configuration, any in
                guard let value = any as? [String] else { return "must be an array of strings" }
                configuration[keyPath: path] = value
                return nil
            },
            check: check, value: { $0[keyPath: path].joined(separator: " ") })
    }

    /// Named values: `NAME=VALUE`, repeated, on the command line; an object in the file.
    static func pairs(_ flag: String, _ key: String, placeholder: String, _ help: String,
                      get: @escaping (Configuration) -> [(String, String)], set: @escaping (inout Configuration, [(String, String)]) -> Void,
                      check: @escaping (Configuration) -> String? = { _ in nil }) -> EndpointOption {
        EndpointOption(flag: flag, key: key, placeholder: placeholder, help: help,
            fromArgument: { configuration, text, first in
                let text = text ?? ""
                guard let equals = text.firstIndex(of: "="), equals != text.startIndex else { return "needs \(placeholder)" }
                set(&configuration, (first ? [] : get(configuration)) + [(String(text[..<equals]), String(text[text.index(after: equals)...]))])
                return nil
            },
            fromFile: { configuration, any in
                guard let value = any as? [String: String] else { return "must be an object of strings" }
                set(&configuration, value.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
                return nil
            },
            check: check, value: { get($0).map { "\($0.0)=\($0.1)" }.joined(separator: " ") })
    }

    /// Registrations only the file holds: an array of the objects the admin API takes, each read
    /// by `read` (which throws `RequestProblem` naming what is wrong).
    static func registrations<T>(_ key: String, _ path: KeyPath<Configuration, [T]>, _ help: String,
                                 read: @escaping (inout Configuration, JSONValue) throws -> Void) -> EndpointOption {
        EndpointOption(flag: nil, key: key, placeholder: nil, help: help,
            fromFile: { configuration, any in
                guard let list = any as? [Any] else { return "must be an array of objects" }
                for (n, item) in list.enumerated() {
                    // Foundation traps, rather than throws, on serializing anything but an object or array.
                    guard item is [String: Any], let data = try? JSONSerialization.data(withJSONObject: item),
                          let json = try? JSONParser().parse(Array(data)) else { return "[\(n)] is not a JSON object" }
                    do {
                        try read(&configuration, json)
                    } catch let problem as RequestProblem {
                        return "[\(n)]: \(problem.detail)"
                    } catch {
                        return "[\(n)]: \(error)"
                    }
                }
                return nil
            },
            value: { String(describing: $0[keyPath: path]) },
            // Registrations are what a cluster's nodes share and an operator changes most.
            reload: .live)
    }

    /// `10`, `1.5`, `0.1`: a number as a person writes it.
    static func shown(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}

// MARK: - Help

extension EndpointOption {
    /// The option's lines in `--help`: the flag and its placeholder, then the help wrapped beside it.
    var helpLines: String {
        var head = "  " + (flag ?? "\"\(key ?? "")\"")
        if let placeholder { head += " " + placeholder }
        var sentences = help
        if let bounds { sentences = String(sentences.dropLast(sentences.hasSuffix(".") ? 1 : 0)) + " (\(bounds))." }
        if let key, flag != nil {
            // A switch's key takes the value the switch sets: `"page": false` for --no-page.
            sentences += placeholder == nil ? " Config file: \"\(key)\": \(switchValue)." : " Config file: \"\(key)\"."
        }
        let column = 27
        let lines = Self.wrap(sentences, width: 95 - column)
        var out = ""
        if head.count > column - 2 {
            out = head + "\n" + String(repeating: " ", count: column) + lines[0]
        } else {
            out = head.padding(toLength: column, withPad: " ", startingAt: 0) + lines[0]
        }
        for line in lines.dropFirst() { out += "\n" + String(repeating: " ", count: column) + line }
        return out
    }

    static func wrap(_ text: String, width: Int) -> [String] {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ") {
            if !line.isEmpty && line.count + 1 + word.count > width {
                lines.append(line)
                line = ""
            }
            line += (line.isEmpty ? "" : " ") + word
        }
        lines.append(line)
        return lines
    }
}
