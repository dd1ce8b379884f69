// Package netproxy is a sandboxed tool's one way out to the network and
// the record of what it was refused: an HTTP(S) proxy that reaches only
// the hosts a manifest allows (network.allowedHosts, read by
// permission.ParseHost), resolving names itself and refusing the
// addresses a name must not lead to (this machine, private networks:
// Special); a resolver that answers every lookup a tool makes without
// the proxy with "no such name" and records the name; and the list of
// refusals (Denial), bounded and counted, to which the sandbox adds what
// it refuses beside them.
//
// It stands apart from internal/sandbox, which starts the tool and
// serves this proxy on the socket inside the tool's network namespace,
// because it is the one piece of the sandbox's parent side that talks to
// the network on a tool's behalf: its rules (which hosts, which
// addresses, from which source address) are read and tested here on
// their own, with loopback servers and a map for a resolver, no sandbox
// started. Packages that word or count refusals (extmcp, toolrun, cli)
// read Denial from here, and extmcp's remote servers share Special, the
// rule for addresses gemkit's own connections refuse too. It imports
// nothing of the sandbox's.
package netproxy
