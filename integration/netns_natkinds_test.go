package integration

import "fmt"

// natKind is how a test home's NAT maps and filters (RFC 4787's terms).
// Every kind but symmetric maps the laptop's port 4001 (where libp2p
// listens and, reusing the port, dials from: TCP and QUIC) to the same
// public port 4001 whatever the destination: an endpoint-independent
// mapping, which is what makes a hole punch possible. They differ in
// what they let in from outside:
//
//   - fullCone: anything sent to public port 4001 (a DNAT to the laptop):
//     endpoint-independent filtering. The laptop is reachable by anyone,
//     and AutoNAT rightly finds it public.
//   - addressRestricted: what comes from an address the laptop sent
//     something to in the last 5 minutes (xt_recent records destinations
//     going out; a DNAT to the laptop checks the source against them),
//     from any port: address-dependent filtering.
//   - portRestricted: only replies to what the laptop sent, address and
//     port (Linux conntrack): address-and-port-dependent filtering.
//   - symmetric: a new random public port for each connection
//     (MASQUERADE --random-fully): an address-and-port-dependent mapping,
//     filtering as portRestricted.
//
// Every kind drops the rest, as a home router does (Linux would answer
// an unsolicited SYN with a reset, which ends a hole punch at once).
type natKind int

const (
	portRestricted natKind = iota
	symmetric
	addressRestricted
	fullCone
)

func (k natKind) String() string {
	return [...]string{"port-restricted", "symmetric", "address-restricted", "full-cone"}[k]
}

// short is k's abbreviation in test names and tables.
func (k natKind) short() string { return [...]string{"PR", "SY", "AR", "FC"}[k] }

// natRules sets up the NAT of home number i (from 1: laptop 10.<i>.0.2,
// public address pub) as kind k.
func (n *netns) natRules(nat string, i int, pub string, k natKind) {
	n.t.Helper()
	laptop := fmt.Sprintf("10.%d.0.2", i)
	ipt := func(args ...string) { n.exec(nat, append([]string{"iptables"}, args...)...) }
	protos := []string{"tcp", "udp"}
	if k == symmetric {
		ipt("-t", "nat", "-A", "POSTROUTING", "-o", "wan", "-j", "MASQUERADE", "--random-fully")
	} else {
		for _, p := range protos {
			ipt("-t", "nat", "-A", "POSTROUTING", "-o", "wan", "-s", laptop, "-p", p, "--sport", "4001", "-j", "SNAT", "--to-source", pub+":4001")
		}
		ipt("-t", "nat", "-A", "POSTROUTING", "-o", "wan", "-j", "MASQUERADE")
	}
	switch k {
	case fullCone:
		for _, p := range protos {
			ipt("-t", "nat", "-A", "PREROUTING", "-i", "wan", "-p", p, "--dport", "4001", "-j", "DNAT", "--to-destination", laptop+":4001")
		}
	case addressRestricted:
		ipt("-t", "mangle", "-A", "PREROUTING", "-i", "lan", "-m", "recent", "--name", "sent", "--rdest", "--set")
		for _, p := range protos {
			ipt("-t", "nat", "-A", "PREROUTING", "-i", "wan", "-p", p, "--dport", "4001",
				"-m", "recent", "--name", "sent", "--rsource", "--rcheck", "--seconds", "300", "-j", "DNAT", "--to-destination", laptop+":4001")
		}
	}
	// What no rule above let in is for the NAT itself, unless it belongs
	// to a connection from inside.
	ipt("-A", "INPUT", "-i", "wan", "-m", "conntrack", "--ctstate", "NEW", "-j", "DROP")
}

// firewallRules6 sets up the firewall of an IPv6 home as kind k, without
// translation (IPv6 homes route their own global prefix: every mapping
// is endpoint-independent, so there is no symmetric kind):
//
//   - fullCone: nothing filtered on port 4001 (an open firewall);
//   - addressRestricted: from outside, what comes from an address the
//     laptop sent to in the last 5 minutes (xt_recent), from any port;
//   - portRestricted: only replies (conntrack), as most home routers do.
//
// The rest is dropped.
func (n *netns) firewallRules6(fw string, k natKind) {
	n.t.Helper()
	ipt := func(args ...string) { n.exec(fw, append([]string{"ip6tables"}, args...)...) }
	switch k {
	case fullCone:
		for _, p := range []string{"tcp", "udp"} {
			ipt("-A", "FORWARD", "-i", "wan", "-p", p, "--dport", "4001", "-j", "ACCEPT")
		}
	case addressRestricted:
		ipt("-t", "mangle", "-A", "PREROUTING", "-i", "lan", "-m", "recent", "--name", "sent", "--rdest", "--set")
		ipt("-A", "FORWARD", "-i", "wan", "-m", "recent", "--name", "sent", "--rsource", "--rcheck", "--seconds", "300", "-j", "ACCEPT")
	case symmetric:
		n.t.Fatalf("no symmetric IPv6 firewall: it maps nothing")
	}
	ipt("-A", "FORWARD", "-i", "wan", "-m", "conntrack", "--ctstate", "NEW,INVALID", "-j", "DROP")
}
