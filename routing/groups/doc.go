// Package groups carries actor group messages between peers on
// GossipSub: it is a peer's transport.GroupTransport (Groups), built in
// the factory given to transport.NewSystem next to the routing.Router,
// on the same host and the system's transport.Port. Users do not call it:
// they join, leave and broadcast with package actor/group, whose calls
// reach it through the actor system.
//
// Each group is a topic "/troupe/<mesh>/group/<name>", joined while the
// group has a local member (or for publishing only). Members announce
// themselves on their group's topic (joined, left, and "present" again
// every 30 s, on a new mesh peer and when asked); what arrives is told to
// the actor system as Joined and Left. Members of a peer that
// disconnected leave at once (unless WithDeparture says it did not leave
// the mesh), those of a peer that restarted (routing.EvtPeerRestarted)
// too, and those of peers out of reach after three renewals and a half
// without news. Other peers are bounded: a topic filter admits only the
// mesh's topics, up to a number per peer; a validator rejects what is not
// a well-formed envelope for its group, and rejections count against the
// sender's peer score; the order of presence messages is remembered for a
// bounded number of members.
//
// # What it owns
//
// The GossipSub instance of the node (PubSub, which discovery's
// advertisements share), the joined topics and their subscriptions, the
// mesh per topic as GossipSub reports it, what each peer announced
// (TopicFilter), and the order of presence messages. The group table
// itself (who is a member of what) is the actor system's; Groups tells it
// what it hears through the Port.
//
// From routing it uses the event routing.EvtPeerRestarted, the sentinels
// of a message that cannot go (routing.ErrTooLarge, routing.ErrLinkFull)
// and the name of an anonymous sender (routing.AnonymousSender); routing
// does not import this package.
//
// # Goroutines
//
// Besides GossipSub's own: the publisher (publish), which drains a
// bounded queue of messages, presence announcements and unsubscriptions
// and spaces the announcements that grafts and questions ask for
// (announceGate); watchPeers, which reads the host's connectedness and
// restart events; renewPresence, which announces the local members anew
// and expires members out of reach; and one reader per subscribed topic
// (read), which hands messages to the local members. Close ends them all
// and waits for them. PublishGroup and AnnounceGroup only queue (a full
// queue drops and counts) and never block the event loop they are called
// on; JoinGroup (a group's first local member) and LeaveGroup when the
// queue is full wait on it for Groups.mu and for GossipSub's event loop
// (joining or leaving the topic), none of it on the network.
//
// # Locks
//
// Groups.mu guards the topics. It is held while a topic is joined or left
// (calls that wait for GossipSub's event loop) and, in leave, while the
// actor system forgets the group's remote members (which takes the
// system's group table lock): Groups.mu comes before both. It is held
// too while WithOnChange's function runs, which must not call Groups
// (the node's only tries a channel send). The actor system calls Groups
// with its group table unlocked, and neither GossipSub's loop nor what
// it calls (meshTracer, the validators) takes Groups.mu, so there is no
// cycle. meshTracer.mu, TopicFilter.mu and presenceOrder.mu are leaves:
// they take no other lock (meshTracer's onGraft, called under its mu,
// only tries a channel send).
//
// # Files
//
// From the service down to its leaves; only topic.go and presence.go
// reach back up, into the Groups they are methods of (and presence.go
// into a topic's subscription).
//
//	groups.go    Groups, New, Join/Leave/PublishGroup, the publisher, Close, Stats
//	topic.go     a group's topic: its validator, its reader, WaitReady and Ready
//	presence.go  presence messages: announcing, renewing, expiring, hearing them
//	order.go     the order of presence messages per member, bounded
//	gate.go      spacing the answers to grafts and questions (pure)
//	mesh.go      GossipSub's mesh per topic (a raw tracer)
//	pubsub.go    what other peers may make GossipSub hold: topic filter, peer scores
//	options.go   New's options, its config and the tests' timings
//	errors.go    sentinel errors
package groups
