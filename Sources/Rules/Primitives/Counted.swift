/// "1 site or app", "2 sites or apps": a count with its noun in the number it takes, for the
/// sentences the commands print. `plural` when the noun does not just take an "s".
public func counted(_ n: Int, _ noun: String, plural: String? = nil) -> String {
    "\(n) \(n == 1 ? noun : plural ?? noun + "s")"
}
