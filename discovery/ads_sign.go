package discovery

import (
	"errors"
	"fmt"

	"github.com/fxamacker/cbor/v2"
	"github.com/libp2p/go-libp2p/core/host"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
)

// Signing and verifying advertisements: the signed form on the wire, its
// decoder's limits, and the check that a peer signed its own.

// signedAd is the message on the wire: the advertisement's bytes and the
// peer key's signature over them.
type signedAd struct {
	Ad  []byte `cbor:"1,keyasint"`
	Sig []byte `cbor:"2,keyasint"`
}

// adDecMode decodes signed advertisements.
var adDecMode = peerDecMode(MaxAdNames)

// peerDecMode returns the CBOR decoding of what peers send
// (advertisements, ad sync messages): duplicate map keys refused, at most
// 4 levels deep, maxArray elements per array and 16 pairs per map.
func peerDecMode(maxArray int) cbor.DecMode {
	dm, err := cbor.DecOptions{
		DupMapKey:        cbor.DupMapKeyEnforcedAPF,
		MaxNestedLevels:  4,
		MaxArrayElements: maxArray,
		MaxMapPairs:      16,
	}.DecMode()
	if err != nil {
		panic(err) // the options are constant: a bad one is a bug
	}
	return dm
}

// Sign encodes ad and signs it with the host's private key.
func Sign(h host.Host, ad *Advertisement) ([]byte, error) {
	key := h.Peerstore().PrivKey(h.ID())
	if key == nil {
		return nil, errors.New("discovery: no private key for the host")
	}
	body, err := cbor.Marshal(ad)
	if err != nil {
		return nil, err
	}
	sig, err := key.Sign(body)
	if err != nil {
		return nil, err
	}
	return cbor.Marshal(signedAd{Ad: body, Sig: sig})
}

// Verify decodes a signed advertisement, checks its limits and that it is
// signed by the peer it describes, which must be from (the pubsub origin).
func Verify(data []byte, from libp2ppeer.ID) (*Advertisement, error) {
	ad, body, sig, err := decodeAd(data)
	if err != nil {
		return nil, err
	}
	return ad, checkAd(ad, body, sig, from)
}

// decodeAd decodes a signed advertisement and checks its limits, but not
// its signature.
func decodeAd(data []byte) (ad *Advertisement, body, sig []byte, err error) {
	if len(data) > MaxAdBytes {
		return nil, nil, nil, fmt.Errorf("%w: %d bytes", ErrBadAd, len(data))
	}
	var s signedAd
	if err := adDecMode.Unmarshal(data, &s); err != nil {
		return nil, nil, nil, fmt.Errorf("%w: %w", ErrBadAd, err)
	}
	ad = new(Advertisement)
	if err := adDecMode.Unmarshal(s.Ad, ad); err != nil {
		return nil, nil, nil, fmt.Errorf("%w: %w", ErrBadAd, err)
	}
	if len(ad.Actors) > MaxAdNames || len(ad.Groups) > MaxAdNames || len(ad.Addrs) > MaxAdAddrs || len(ad.Global) > MaxAdGlobal {
		return nil, nil, nil, fmt.Errorf("%w: too many names", ErrBadAd)
	}
	return ad, s.Ad, s.Sig, nil
}

// checkAd checks that ad describes from and that sig is from's signature
// over body.
func checkAd(ad *Advertisement, body, sig []byte, from libp2ppeer.ID) error {
	id, err := libp2ppeer.IDFromBytes(ad.Peer)
	if err != nil || id != from {
		return fmt.Errorf("%w: describes %v, sent by %v", ErrBadAd, id, from)
	}
	pub, err := id.ExtractPublicKey()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadAd, err)
	}
	if ok, err := pub.Verify(body, sig); err != nil || !ok {
		return fmt.Errorf("%w: bad signature", ErrBadAd)
	}
	return nil
}
