package consumer

// pump moves one cluster's messages into the merged stream, one at a time,
// in the order pulsar-client-go delivers them (which keeps each
// partition's order). It holds at most one message: the one it is offering
// to the stream.
//
// This is the stage where a live topology change will hold the messages of
// a moved key until the earlier messages of its routing slot at the old
// owner are delivered: between the read and the offer.
func (c *Consumer) pump(k *cluster) {
	defer c.pumps.Done()
	in := k.link.stream.Chan()
	for {
		var m *Message
		select {
		case cm := <-in:
			m = newMessage(cm.Message, k.name)
		case resume := <-k.pause:
			if !c.paused(resume) {
				return
			}
			continue
		case <-c.closing:
			return
		}
		// Counted before the offer, so that a caller holding m sees it
		// counted; taken back if m is dropped.
		k.delivered.Add(1)
		if m.RedeliveryCount > 0 {
			k.redelivered.Add(1)
		}
		k.lastPublish.Store(m.PublishTime.UnixNano())
		select {
		case c.out <- m:
			if obs := c.cfg.observer; obs != nil {
				obs.OnReceive(m)
			}
		case resume := <-k.pause:
			// m was read before the seek: drop it.
			k.uncount(m)
			if !c.paused(resume) {
				return
			}
		case <-c.closing:
			k.uncount(m)
			return
		}
	}
}

// paused waits for a seek to end; false when the Consumer closes first.
func (c *Consumer) paused(resume chan struct{}) bool {
	select {
	case <-resume:
		return true
	case <-c.closing:
		return false
	}
}

// uncount takes back the counts of a message that was not delivered.
func (k *cluster) uncount(m *Message) {
	k.delivered.Add(^uint64(0))
	if m.RedeliveryCount > 0 {
		k.redelivered.Add(^uint64(0))
	}
}
