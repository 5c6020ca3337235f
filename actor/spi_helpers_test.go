package actor

import "github.com/troupe-mesh/troupe/actor/internal/spi"

// newCredit is transport.NewCredit for the tests of this package.
func newCredit(low int64) *spi.Credit {
	c := new(spi.Credit)
	c.Init(low)
	return c
}
