extension FixedWidthInteger {
    /// Adds, stopping at the type's bounds instead of trapping: for counts read from files a
    /// stranger could have written (a segment's digest), where a sum past the bounds is already
    /// a lie and must not end the process.
    public static func +| (a: Self, b: Self) -> Self {
        let (sum, overflow) = a.addingReportingOverflow(b)
        guard overflow else { return sum }
        return b > 0 ? .max : .min
    }

    public static func +|= (a: inout Self, b: Self) {
        a = a +| b
    }
}

infix operator +| : AdditionPrecedence
infix operator +|= : AssignmentPrecedence
