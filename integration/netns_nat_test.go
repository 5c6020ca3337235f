package integration

import (
	"fmt"
	"os/exec"
	"slices"
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
	lan         string // the laptop's own address
	kind        natKind
}

// natWorld builds a public bridge with pub hosts (11.0.0.1, 11.0.0.2, …)
// and one home per entry of sym: a NAT namespace at 11.0.0.101,
// 11.0.0.102, … translating the LAN 10.<i>.0.0/24 of one laptop
// (10.<i>.0.2, routed through 10.<i>.0.1), symmetric if its entry is
// true and port-restricted otherwise (natWorldOf takes any kinds,
// netns_natkinds_test.go). A public host answers from its address but
// opens connections from a second one (11.0.0.51, 11.0.0.52, …: a
// SNAT of what it starts), as a server that checks reachability should:
// its AutoNAT dial-backs then come from an address the laptop never sent
// to, which a NAT that lets in what comes from known addresses
// (address-restricted) drops, as it would drop any stranger's; a daemon
// there that listens on its first address only (natDaemonOn) never
// advertises the second. It skips the test without iptables (see
// skipNetns).
func (n *netns) natWorld(pub int, sym ...bool) (public []string, homes []natHome) {
	n.t.Helper()
	kinds := make([]natKind, len(sym)) // portRestricted
	for i, s := range sym {
		if s {
			kinds[i] = symmetric
		}
	}
	return n.natWorldOf(pub, kinds...)
}

// natWorldOf is natWorld with homes of the given kinds.
func (n *netns) natWorldOf(pub int, kinds ...natKind) (public []string, homes []natHome) {
	n.t.Helper()
	if _, err := exec.LookPath("iptables"); err != nil {
		skipNetns(n.t, "iptables is missing (apt-get install iptables)")
	}
	plug := n.publicBridge()
	for i := range pub {
		h := n.add(fmt.Sprintf("pub%d", i+1))
		plug(h, "eth0", fmt.Sprintf("11.0.0.%d/24", i+1))
		n.ip("-n", h, "addr", "add", fmt.Sprintf("11.0.0.%d/32", 51+i), "dev", "eth0")
		n.exec(h, "iptables", "-t", "nat", "-A", "POSTROUTING", "-o", "eth0", "-j", "SNAT", "--to-source", fmt.Sprintf("11.0.0.%d", 51+i))
		public = append(public, h)
	}
	for i, kind := range kinds {
		home := natHome{nat: n.add(fmt.Sprintf("nat%d", i+1)), laptop: n.add(fmt.Sprintf("lap%d", i+1)), public: fmt.Sprintf("11.0.0.%d", 101+i), kind: kind}
		home.seen, home.lan = home.public, fmt.Sprintf("10.%d.0.2", i+1)
		plug(home.nat, "wan", home.public+"/24")
		n.ip("link", "add", "lan", "netns", home.nat, "type", "veth", "peer", "name", "eth0", "netns", home.laptop)
		n.ip("-n", home.nat, "addr", "add", fmt.Sprintf("10.%d.0.1/24", i+1), "dev", "lan")
		n.ip("-n", home.nat, "link", "set", "lan", "up")
		n.ip("-n", home.laptop, "addr", "add", fmt.Sprintf("10.%d.0.2/24", i+1), "dev", "eth0")
		n.ip("-n", home.laptop, "link", "set", "eth0", "up")
		n.ip("-n", home.laptop, "route", "add", "default", "via", fmt.Sprintf("10.%d.0.1", i+1))
		n.exec(home.nat, "sysctl", "-qw", "net.ipv4.ip_forward=1")
		n.natRules(home.nat, i+1, home.public, kind)
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
// Addresses skip duplicate address detection, usable at once. Each home
// filters as its entry of kinds says (firewallRules6); public hosts open
// connections from a second address (2a00:ff::51, …), as natWorld's do.
func (n *netns) firewallWorld6(pub, k int) (public []string, homes []natHome) {
	n.t.Helper()
	return n.firewallWorld6Of(pub, slices.Repeat([]natKind{portRestricted}, k)...)
}

// firewallWorld6Of is firewallWorld6 with homes of the given kinds.
func (n *netns) firewallWorld6Of(pub int, kinds ...natKind) (public []string, homes []natHome) {
	n.t.Helper()
	if _, err := exec.LookPath("ip6tables"); err != nil {
		skipNetns(n.t, "ip6tables is missing (apt-get install iptables)")
	}
	plug := n.publicBridge()
	for i := range pub {
		h := n.add(fmt.Sprintf("pub%d", i+1))
		n.exec(h, "sysctl", "-qw", "net.ipv6.conf.default.accept_dad=0")
		plug(h, "eth0", fmt.Sprintf("2a00:ff::%d/64", i+1))
		n.ip("-n", h, "addr", "add", fmt.Sprintf("2a00:ff::%d/128", 51+i), "dev", "eth0", "nodad")
		n.exec(h, "ip6tables", "-t", "nat", "-A", "POSTROUTING", "-o", "eth0", "-j", "SNAT", "--to-source", fmt.Sprintf("2a00:ff::%d", 51+i))
		public = append(public, h)
	}
	for i, kind := range kinds {
		home := natHome{nat: n.add(fmt.Sprintf("fw%d", i+1)), laptop: n.add(fmt.Sprintf("lap%d", i+1)), public: fmt.Sprintf("2a00:ff::%d", 101+i), kind: kind}
		for _, ns := range []string{home.nat, home.laptop} {
			n.exec(ns, "sysctl", "-qw", "net.ipv6.conf.default.accept_dad=0")
		}
		n.exec(home.nat, "sysctl", "-qw", "net.ipv6.conf.all.forwarding=1")
		plug(home.nat, "wan", home.public+"/64")
		prefix := fmt.Sprintf("2a00:1:%d::", i+1)
		home.seen, home.lan = prefix+"2", prefix+"2"
		n.ip("link", "add", "lan", "netns", home.nat, "type", "veth", "peer", "name", "eth0", "netns", home.laptop)
		n.ip("-n", home.nat, "addr", "add", prefix+"1/64", "dev", "lan", "nodad")
		n.ip("-n", home.nat, "link", "set", "lan", "up")
		n.ip("-n", home.laptop, "addr", "add", prefix+"2/64", "dev", "eth0", "nodad")
		n.ip("-n", home.laptop, "link", "set", "eth0", "up")
		n.ip("-n", home.laptop, "-6", "route", "add", "default", "via", prefix+"1")
		n.firewallRules6(home.nat, kind)
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
