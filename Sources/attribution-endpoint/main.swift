import Endpoint
import Foundation

// Everything lives in the Endpoint library so that tests can run the same server in-process.
exit(EndpointServer.main(arguments: Array(CommandLine.arguments.dropFirst()),
                         environment: ProcessInfo.processInfo.environment))
