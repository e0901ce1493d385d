import Demo
import Endpoint
import Foundation

// The server and the demo live in libraries, so that tests run the same code in process.
let arguments = Array(CommandLine.arguments.dropFirst())
let environment = ProcessInfo.processInfo.environment
exit(arguments.first == "demo"
     ? Demo.main(arguments: Array(arguments.dropFirst()), environment: environment)
     : EndpointServer.main(arguments: arguments, environment: environment))
