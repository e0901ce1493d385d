/// Names as numbers, each name kept once: what `ConversionTable` rows point at.
struct NameTable {
    private(set) var names: [String] = []
    private var numbers: [String: UInt32] = [:]

    mutating func number(_ name: String) -> UInt32 {
        if let number = numbers[name] { return number }
        let number = UInt32(truncatingIfNeeded: names.count)
        names.append(name)
        numbers[name] = number
        return number
    }

    func name(_ number: UInt32) -> String { Int(number) < names.count ? names[Int(number)] : "" }
}
