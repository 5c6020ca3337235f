package peer_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/peer"
)

// A name claimed for the whole mesh: b sees a's claim once a's
// advertisement reaches it, and its own claim of the name then fails
// with ErrNameTaken.
func ExampleNode_ClaimGlobal() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	opts := []peer.Option{peer.WithListenAddrs("/ip4/127.0.0.1/tcp/0"), peer.WithGroups(true),
		peer.WithAdvertisements(50*time.Millisecond, 5*time.Second)}
	a, err := peer.New(ctx, opts...)
	if err != nil {
		log.Fatal(err)
	}
	defer a.Close(ctx)
	b, err := peer.New(ctx, opts...)
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close(ctx)
	if err := b.Connect(ctx, *a.AddrInfo()); err != nil {
		log.Fatal(err)
	}

	idle := func(c *actor.Context) { c.Receive(actor.On(func(peer.GlobalNameLost) {})) }
	leader, _ := a.System().Spawn("leader", idle)
	if err := a.ClaimGlobal(ctx, "scheduler", leader); err != nil {
		log.Fatal(err)
	}
	for { // b learns of the claim with a's next advertisement
		if ref, ok := b.WhereisGlobal("scheduler"); ok {
			fmt.Println(ref == leader)
			break
		}
		select {
		case <-b.Directory().Updated():
		case <-ctx.Done():
			log.Fatal(ctx.Err())
		}
	}
	mine, _ := b.System().Spawn("mine", idle)
	err = b.ClaimGlobal(ctx, "scheduler", mine)
	fmt.Println(errors.Is(err, peer.ErrNameTaken))
	// Output:
	// true
	// true
}
