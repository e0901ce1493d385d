import Demo
import Endpoint
import Foundation

// The server and the demo live in libraries, so that tests run the same code in process.
let arguments = Array(CommandLine.arguments.dropFirst())
let environment = ProcessInfo.processInfo.environment
switch arguments.first {
case "demo": exit(Demo.main(arguments: Array(arguments.dropFirst()), environment: environment))
case "check-plist": exit(CheckPlistCommand.main(arguments: Array(arguments.dropFirst()), environment: environment))
case "send-samples": exit(SendSamplesCommand.main(arguments: Array(arguments.dropFirst()), environment: environment))
case "rotate-token-key": exit(RotateTokenKeyCommand.main(arguments: Array(arguments.dropFirst()), environment: environment))
case "clickhouse": exit(ClickHouseCommand.main(arguments: Array(arguments.dropFirst())))
case "token-keys": exit(TokenKeysCommand.main(arguments: Array(arguments.dropFirst())))
case "backup": exit(BackupCommand.main(arguments: Array(arguments.dropFirst()), environment: environment))
case "restore": exit(RestoreCommand.main(arguments: Array(arguments.dropFirst()), environment: environment))
case "viewer-token": exit(ViewerTokenCommand.main(arguments: Array(arguments.dropFirst()), environment: environment))
default: exit(EndpointCommand.main(arguments: arguments, environment: environment))
}
