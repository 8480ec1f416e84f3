package main

import (
	"net/url"
	"strconv"
	"strings"
)

// topicName is a persistent topic split into its parts.
type topicName struct {
	tenant, namespace, local string
}

// parseTopicName accepts "persistent://tenant/ns/topic", "tenant/ns/topic"
// or a bare "topic" (in public/default), as pulsar-client-go does. Errors
// are usage errors naming what (the flag or argument).
func parseTopicName(what, s string) (topicName, error) {
	rest := s
	if r, ok := strings.CutPrefix(s, "persistent://"); ok {
		rest = r
	} else if strings.Contains(s, "://") {
		return topicName{}, badUsage(what, "%q: only persistent topics are supported", s)
	}
	parts := strings.Split(rest, "/")
	switch {
	case len(parts) == 1 && parts[0] != "":
		return topicName{"public", "default", parts[0]}, nil
	case len(parts) == 3 && parts[0] != "" && parts[1] != "" && parts[2] != "":
		return topicName{parts[0], parts[1], parts[2]}, nil
	}
	return topicName{}, badUsage(what, "%q is not [persistent://]tenant/namespace/topic or a bare topic name", s)
}

// String returns the full name, as the producer and consumer are given it.
func (t topicName) String() string {
	return "persistent://" + t.tenant + "/" + t.namespace + "/" + t.local
}

// partition returns the full name of partition i.
func (t topicName) partition(i int) string {
	return t.String() + "-partition-" + strconv.Itoa(i)
}

// path returns the admin REST path of the topic with suffix appended.
func (t topicName) path(suffix string) string {
	return "/admin/v2/persistent/" + url.PathEscape(t.tenant) + "/" + url.PathEscape(t.namespace) +
		"/" + url.PathEscape(t.local) + suffix
}
