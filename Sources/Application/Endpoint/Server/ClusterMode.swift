import HTTPServer

/// With `--cluster`, what every node must agree on (registrations, token keys) comes from the
/// files every node is given, never from one node's admin API: a write there would change one
/// node and leave the others behind, and nodes never copy state to each other.
enum ClusterMode {
    /// The admin token's gate, refusing every change to a registration or a key with 409 and how
    /// to make it instead. Reading stays open to the token.
    static func registrationGate(_ bearer: @escaping RouteGroup.Gate) -> RouteGroup.Gate {
        { request in
            try bearer(request)
            guard request.method == "GET" || request.method == "HEAD" else {
                throw Problem(status: 409, rule: "registrations_are_shared", detail: """
                    this node runs with --cluster: registrations come from the config file and token keys from the \
                    --token-keys file, the same on every node. Change the files, give them to every node, and reload \
                    each (systemctl reload attribution-endpoint, or SIGHUP; docs/DEPLOYMENT.md, "Reloading without a restart").
                    """)
            }
        }
    }

    /// Spend in a cluster: nodes share no spend yet, and a file given to one node behind a
    /// balancer would be read by another without it. Refused with 409 until they do.
    static func spendGate(_ gate: @escaping RouteGroup.Gate) -> RouteGroup.Gate {
        { request in
            try gate(request)
            guard request.method == "GET" || request.method == "HEAD" else {
                throw Problem(status: 409, rule: "spend_not_shared", detail: """
                    this node runs with --cluster, and the nodes share no spend yet: spend given to one node would be \
                    missing from the others' pages. Cost per install and return on ad spend work on one node for now.
                    """)
            }
        }
    }
}
