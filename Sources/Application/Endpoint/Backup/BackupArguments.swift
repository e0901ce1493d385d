/// What `backup` and `restore` take: one folder, and the data directory from `--data DIR` or
/// the config file's `"data"` (`./data` without either).
struct BackupArguments: Equatable {
    var folder: String
    var dataDirectory: String

    enum Parsed: Equatable {
        case run(BackupArguments)
        case help
        case refused(String)
    }

    /// `command` names the command in refusals; `folderRole` says what the folder is for.
    static func parse(_ arguments: [String], command: String, folderRole: String) -> Parsed {
        var folder: String?, data: String?, config: String?
        var i = 0
        func value() -> String? { i += 1; return i < arguments.count ? arguments[i] : nil }
        while i < arguments.count {
            switch arguments[i] {
            case "--data", "--data-dir":
                guard let given = value() else { return .refused("--data needs a folder") }
                data = given
            case "--config":
                guard let given = value() else { return .refused("--config needs a file") }
                config = given
            case "--help", "-h": return .help
            case let word where !word.hasPrefix("-") && folder == nil: folder = word
            default: return .refused("unknown argument '\(arguments[i])' (see \(command) --help)")
            }
            i += 1
        }
        guard let folder, !folder.isEmpty else { return .refused("name \(folderRole) (see \(command) --help)") }
        var directory = data ?? "./data"
        if let config, data == nil {
            var configuration = EndpointConfiguration()
            do { try configuration.apply(configFile: config) } catch { return .refused("\(error)") }
            directory = configuration.dataDirectory
        }
        return .run(BackupArguments(folder: folder, dataDirectory: directory))
    }
}
