package integration

import (
	"fmt"
	"os/exec"
	"strings"
)

// The Internet in namespaces: a "public" bridge whose hosts have
// addresses libp2p takes for public ones (11.0.0.0/24; the namespaces
// route nowhere else, so nothing leaves the machine), and homes, each a
// NAT namespace masquerading one laptop's LAN onto the bridge.

// natHome is one home built by natWorld.
type natHome struct {
	nat, laptop string // namespaces
	public      string // the NAT's address on the public bridge
	seen        string // the laptop's address as others see it: public (IPv4), its own (IPv6)
}

// natWorld builds a public bridge with pub hosts (11.0.0.1, 11.0.0.2, …)
// and one home per entry of symmetric: a NAT namespace at 11.0.0.101,
// 11.0.0.102, … masquerading the LAN 10.<i>.0.0/24 of one laptop
// (10.<i>.0.2, routed through 10.<i>.0.1). Linux's masquerading keeps a
// connection's source port when it can (an endpoint-independent mapping:
// hole punching can succeed); a symmetric home picks a random port per
// connection (--random-fully), which defeats it. Like a home router, a
// NAT drops unsolicited packets. It skips the test without iptables
// (see skipNetns).
func (n *netns) natWorld(pub int, symmetric ...bool) (public []string, homes []natHome) {
	n.t.Helper()
	if _, err := exec.LookPath("iptables"); err != nil {
		skipNetns(n.t, "iptables is missing (apt-get install iptables)")
	}
	plug := n.publicBridge()
	for i := range pub {
		h := n.add(fmt.Sprintf("pub%d", i+1))
		plug(h, "eth0", fmt.Sprintf("11.0.0.%d/24", i+1))
		public = append(public, h)
	}
	for i, sym := range symmetric {
		home := natHome{nat: n.add(fmt.Sprintf("nat%d", i+1)), laptop: n.add(fmt.Sprintf("lap%d", i+1)), public: fmt.Sprintf("11.0.0.%d", 101+i)}
		home.seen = home.public
		plug(home.nat, "wan", home.public+"/24")
		n.ip("link", "add", "lan", "netns", home.nat, "type", "veth", "peer", "name", "eth0", "netns", home.laptop)
		n.ip("-n", home.nat, "addr", "add", fmt.Sprintf("10.%d.0.1/24", i+1), "dev", "lan")
		n.ip("-n", home.nat, "link", "set", "lan", "up")
		n.ip("-n", home.laptop, "addr", "add", fmt.Sprintf("10.%d.0.2/24", i+1), "dev", "eth0")
		n.ip("-n", home.laptop, "link", "set", "eth0", "up")
		n.ip("-n", home.laptop, "route", "add", "default", "via", fmt.Sprintf("10.%d.0.1", i+1))
		n.exec(home.nat, "sysctl", "-qw", "net.ipv4.ip_forward=1")
		masq := []string{"iptables", "-t", "nat", "-A", "POSTROUTING", "-o", "wan", "-j", "MASQUERADE"}
		if sym {
			masq = append(masq, "--random-fully")
		}
		n.exec(home.nat, masq...)
		// As a home router does, drop what nobody inside asked for (Linux
		// would answer it with a reset, which ends a hole punch at once).
		n.exec(home.nat, "iptables", "-A", "INPUT", "-i", "wan", "-m", "conntrack", "--ctstate", "NEW", "-j", "DROP")
		homes = append(homes, home)
	}
	n.waitWorld(public, homes)
	return public, homes
}

// publicBridge makes the public bridge and returns plug, which adds a
// veth from a namespace onto it with an address.
func (n *netns) publicBridge() (plug func(ns, dev, addr string)) {
	br := n.add("pb")
	n.ip("-n", br, "link", "add", "br0", "type", "bridge")
	n.ip("-n", br, "link", "set", "br0", "up")
	port := 0
	return func(ns, dev, addr string) {
		port++
		p := fmt.Sprintf("p%d", port)
		n.ip("link", "add", dev, "netns", ns, "type", "veth", "peer", "name", p, "netns", br)
		if strings.Contains(addr, ":") { // IPv6: no duplicate address detection
			n.ip("-n", ns, "addr", "add", addr, "dev", dev, "nodad")
		} else {
			n.ip("-n", ns, "addr", "add", addr, "dev", dev)
		}
		n.ip("-n", ns, "link", "set", dev, "up")
		n.ip("-n", br, "link", "set", p, "master", "br0")
		n.ip("-n", br, "link", "set", p, "up")
	}
}

// waitUp waits for every interface of a world to be up.
func (n *netns) waitWorld(public []string, homes []natHome) {
	for _, h := range public {
		n.waitUp(h, "eth0")
	}
	for _, h := range homes {
		n.waitUp(h.nat, "wan")
		n.waitUp(h.laptop, "eth0")
	}
}

// firewallWorld6 is natWorld with IPv6 and no NAT, as IPv6 homes are: a
// public bridge 2a00:ff::/64 with pub hosts (2a00:ff::1, …), and k homes,
// each a router at 2a00:ff::101, … forwarding the laptop's own global
// prefix 2a00:1:<i>::/64 (laptop at ::2) with the stateful firewall of a
// home router: from outside, only what the laptop asked for passes. Every
// public host and router routes each home's prefix to its router.
// Addresses skip duplicate address detection, usable at once.
func (n *netns) firewallWorld6(pub, k int) (public []string, homes []natHome) {
	n.t.Helper()
	if _, err := exec.LookPath("ip6tables"); err != nil {
		skipNetns(n.t, "ip6tables is missing (apt-get install iptables)")
	}
	plug := n.publicBridge()
	for i := range pub {
		h := n.add(fmt.Sprintf("pub%d", i+1))
		n.exec(h, "sysctl", "-qw", "net.ipv6.conf.default.accept_dad=0")
		plug(h, "eth0", fmt.Sprintf("2a00:ff::%d/64", i+1))
		public = append(public, h)
	}
	for i := range k {
		home := natHome{nat: n.add(fmt.Sprintf("fw%d", i+1)), laptop: n.add(fmt.Sprintf("lap%d", i+1)), public: fmt.Sprintf("2a00:ff::%d", 101+i)}
		for _, ns := range []string{home.nat, home.laptop} {
			n.exec(ns, "sysctl", "-qw", "net.ipv6.conf.default.accept_dad=0")
		}
		n.exec(home.nat, "sysctl", "-qw", "net.ipv6.conf.all.forwarding=1")
		plug(home.nat, "wan", home.public+"/64")
		prefix := fmt.Sprintf("2a00:1:%d::", i+1)
		home.seen = prefix + "2"
		n.ip("link", "add", "lan", "netns", home.nat, "type", "veth", "peer", "name", "eth0", "netns", home.laptop)
		n.ip("-n", home.nat, "addr", "add", prefix+"1/64", "dev", "lan", "nodad")
		n.ip("-n", home.nat, "link", "set", "lan", "up")
		n.ip("-n", home.laptop, "addr", "add", prefix+"2/64", "dev", "eth0", "nodad")
		n.ip("-n", home.laptop, "link", "set", "eth0", "up")
		n.ip("-n", home.laptop, "-6", "route", "add", "default", "via", prefix+"1")
		n.exec(home.nat, "ip6tables", "-A", "FORWARD", "-i", "wan", "-m", "conntrack", "--ctstate", "NEW,INVALID", "-j", "DROP")
		homes = append(homes, home)
	}
	for i, home := range homes {
		prefix := fmt.Sprintf("2a00:1:%d::/64", i+1)
		for _, h := range public {
			n.ip("-n", h, "-6", "route", "add", prefix, "via", home.public)
		}
		for j, other := range homes {
			if j != i {
				n.ip("-n", other.nat, "-6", "route", "add", prefix, "via", home.public)
			}
		}
	}
	n.waitWorld(public, homes)
	return public, homes
}

// exec runs a command inside namespace ns and fails the test if it fails.
func (n *netns) exec(ns string, argv ...string) {
	n.t.Helper()
	args := append([]string{"netns", "exec", ns}, argv...)
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		n.t.Fatalf("in %s: %v: %v\n%s", ns, argv, err, out)
	}
}
