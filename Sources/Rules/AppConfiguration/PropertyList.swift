import Foundation

/// A property list as Foundation reads it, in a form that can be walked without `Any`: the
/// check names the type it found wherever a key has the wrong one.
public indirect enum PropertyList: Sendable, Equatable {
    case dictionary([String: PropertyList])
    case array([PropertyList])
    case string(String)
    case integer(Int)
    case real(Double)
    case boolean(Bool)
    case date(Date)
    case data(Int)

    public enum Format: String, Sendable, Codable {
        case xml, binary
    }

    public struct NotAPropertyList: Error, Sendable, Equatable {
        public let detail: String
    }

    /// Reads XML and binary property lists with `PropertyListSerialization`. Its third format,
    /// OpenStep text, reads almost any word as a string, and Xcode never writes an Info.plist in it.
    public static func read(_ bytes: [UInt8]) throws(NotAPropertyList) -> (PropertyList, Format) {
        if let refusal = BinaryPlistScreen.refusal(bytes) ?? XMLPlistScreen.refusal(bytes) { throw NotAPropertyList(detail: refusal) }
        var format = PropertyListSerialization.PropertyListFormat.xml
        let object: Any
        do {
            object = try PropertyListSerialization.propertyList(from: Data(bytes), options: [], format: &format)
        } catch {
            // Foundation's own sentence says nothing ("The operation could not be completed"); its
            // debug description says what and on which line.
            let why = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String ?? (error as NSError).localizedDescription
            throw NotAPropertyList(detail: "is not a property list (XML or binary): \(why)")
        }
        switch format {
        case .binary: return (PropertyList(foundation: object), .binary)
        case .xml: return (PropertyList(foundation: object), .xml)
        default: throw NotAPropertyList(detail: "is neither an XML nor a binary property list")
        }
    }

    init(foundation object: Any) {
        switch object {
        case let dictionary as [String: Any]: self = .dictionary(dictionary.mapValues(PropertyList.init(foundation:)))
        case let array as [Any]: self = .array(array.map(PropertyList.init(foundation:)))
        case let string as String: self = .string(string)
        case let date as Date: self = .date(date)
        case let data as Data: self = .data(data.count)
        case let number as NSNumber:
            // A plist's <true/> and <integer>1</integer> both arrive as numbers on some platforms;
            // the number's own type tells them apart, and a <real> must not pass for an integer.
            switch String(cString: number.objCType) {
            case "c", "B": self = Self.isBoolean(number) ? .boolean(number.boolValue) : .integer(number.intValue)
            case "d", "f": self = .real(number.doubleValue)
            default: self = .integer(number.intValue)
            }
        case let boolean as Bool: self = .boolean(boolean)
        default: self = .string(String(describing: object))
        }
    }

    private static func isBoolean(_ number: NSNumber) -> Bool {
        #if canImport(Darwin)
        return CFGetTypeID(number) == CFBooleanGetTypeID()
        #else
        return true
        #endif
    }

    /// The type as Xcode's property list editor names it.
    public var typeName: String {
        switch self {
        case .dictionary: "Dictionary"
        case .array: "Array"
        case .string: "String"
        case .integer, .real: "Number"
        case .boolean: "Boolean"
        case .date: "Date"
        case .data: "Data"
        }
    }

    public subscript(key: String) -> PropertyList? {
        if case .dictionary(let members) = self { return members[key] }
        return nil
    }
}
