
/// Which of a report's two copies this is. The browser sends one identical body to the click
/// source and one to the destination; only the site it was sent to tells them apart.
public enum ReportRole: String, Sendable, Equatable {
    case source
    case destination
}
