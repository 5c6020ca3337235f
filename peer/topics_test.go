package peer

import (
	"testing"

	"github.com/troupe-mesh/troupe/discovery"
	"github.com/troupe-mesh/troupe/routing/groups"
)

// TestTopicFilterAdmitsTheAdsTopic: the groups' GossipSub filter names
// discovery's advertisement topic as discovery does.
func TestTopicFilterAdmitsTheAdsTopic(t *testing.T) {
	if !groups.NewTopicFilter("team").CanSubscribe(discovery.AdsTopic("team")) {
		t.Fatalf("the filter refuses %q", discovery.AdsTopic("team"))
	}
	if groups.NewTopicFilter("team").CanSubscribe(discovery.AdsTopic("other")) {
		t.Fatal("the filter admits another mesh's ads")
	}
}
