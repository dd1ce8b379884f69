package sandbox

// What the sandbox refuses beside the proxy and its resolver
// (internal/sandbox/netproxy), each kept as a netproxy.Denial in the
// same record so that a person reads every refusal of a run in one list:
// a connection made without the proxy, a listen, a Unix-domain socket
// (connect_linux.go), a write (writes_linux.go). They are declared here,
// for every system, because the callers that word or count a refusal
// build everywhere.

// DirectMethod is the Method of a Denial that is a connection the tool
// tried without the proxy, to an address (connect_linux.go).
const DirectMethod = "DIRECT"

// Reasons of a refused direct connection, to a host not allowed and to
// one allowed (reached only through the proxy, which the client did not
// use).
const (
	DirectNotAllowed = "connection without the sandbox's proxy; host not allowed"
	DirectNoProxy    = "connection to an allowed host without the sandbox's proxy, which alone reaches it (HTTPS_PROXY, HTTP_PROXY; Node's fetch uses it from Node 22.21 with NODE_USE_ENV_PROXY=1)"
)

// ListenMethod is the Method of a Denial that is a TCP port the tool
// tried to listen on (a bind of a stream socket to a port,
// connect_linux.go): its Host is the address, its Port the port.
const ListenMethod = "LISTEN"

// ListenRefused is the reason of a refused listen.
const ListenRefused = "listening on a TCP port: the sandbox's network is its own, where none of your programs could reach the port"

// UnixMethod is the Method of a Denial that is a Unix-domain socket the
// tool tried to create where Policy.UnixSockets does not allow it; it
// has no host or port.
const UnixMethod = "UNIX"

// UnixNotAllowed is the reason of a refused Unix-domain socket.
const UnixNotAllowed = "Unix-domain sockets not allowed"

// WriteMethod is the Method of a Denial of a write, whose Path says
// what the tool tried to write.
const WriteMethod = "write"

// Why a write was refused (a Denial's Reason).
const (
	WriteWorkspace = "the workspace is read-only to it"
	WriteExtension = "its extension's folder, read-only to it whatever is allowed"
	WriteProtected = "a protected path of the workspace, read-only whatever is allowed"
	WriteReadOnly  = "the folder of another extension, read-only to every sandboxed process"
	WriteOutside   = "outside what it may write"
)
