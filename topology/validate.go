package topology

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// Validate reports every problem in t, not just the first: the result is
// nil or an errors.Join of *FieldError values, in cluster order, each
// wrapping one sentinel (ErrNoClusters, ErrMissingField, ErrBadName,
// ErrDuplicateName, ErrDuplicateURL, ErrBadURL, ErrBadWeight,
// ErrUnreadableFile, ErrConflict, ErrBadSetting).
//
// Validate reads (the first bytes of) every TLS and token file, so a
// topology valid on one host may be invalid on another. It never modifies
// t. Error text never includes a token or file contents.
func (t *Topology) Validate() error {
	if t == nil || len(t.Clusters) == 0 {
		return errors.Join(&FieldError{Index: -1, Field: "clusters", Err: ErrNoClusters})
	}
	var errs []error
	names := make(map[string]int)    // name -> first index
	prefixes := make(map[string]int) // EnvPrefix(name) -> first index
	brokers := make(map[string]int)  // "host:port" -> first index
	admins := make(map[string]int)   // canonical admin URL -> first index
	for i := range t.Clusters {
		c := &t.Clusters[i]
		k := checker{cluster: label(c.Name, i), index: i}
		svc := c.check(&k)

		if c.Name != "" {
			if j, dup := names[c.Name]; dup {
				k.add("name", ErrDuplicateName, "also used by %s", t.describe(j))
			} else if j, dup := prefixes[EnvPrefix(c.Name)]; dup {
				k.add("name", ErrDuplicateName, "environment prefix %s also used by %s",
					EnvPrefix(c.Name), t.describe(j))
			} else {
				names[c.Name] = i
				prefixes[EnvPrefix(c.Name)] = i
			}
		}
		for _, ep := range svc.endpoints {
			if j, dup := brokers[ep]; dup && j != i {
				k.add("serviceURL", ErrDuplicateURL, "broker %s also used by %s", ep, t.describe(j))
				break
			}
			brokers[ep] = i
		}
		if c.AdminURL != "" {
			if canon, reason := parseAdminURL(c.AdminURL); reason == "" {
				if j, dup := admins[canon]; dup {
					k.add("adminURL", ErrDuplicateURL, "also used by %s", t.describe(j))
				} else {
					admins[canon] = i
				}
			}
		}
		errs = append(errs, k.errs...)
	}
	return errors.Join(errs...)
}

// describe names cluster i for use inside a reason.
func (t *Topology) describe(i int) string {
	if n := t.Clusters[i].Name; n != "" {
		return "cluster " + strconv.Quote(n) + " (#" + strconv.Itoa(i) + ")"
	}
	return "cluster #" + strconv.Itoa(i)
}

// label is the FieldError.Cluster value for a cluster at index i (or -1).
func label(name string, i int) string {
	if name == "" && i >= 0 {
		return "#" + strconv.Itoa(i)
	}
	return name
}

// checker collects FieldErrors for one cluster.
type checker struct {
	cluster string
	index   int
	errs    []error
}

func (k *checker) add(field string, err error, format string, args ...any) {
	k.errs = append(k.errs, &FieldError{
		Cluster: k.cluster,
		Index:   k.index,
		Field:   field,
		Reason:  fmt.Sprintf(format, args...),
		Err:     err,
	})
}

// check adds the problems that concern c alone to k and returns the parsed
// service URL (zero when it is invalid).
func (c *Cluster) check(k *checker) serviceURL {
	switch {
	case c.Name == "":
		k.add("name", ErrMissingField, "must not be empty")
	case !utf8.ValidString(c.Name):
		k.add("name", ErrBadName, "is not valid UTF-8")
	default:
		for _, r := range c.Name {
			if r == ' ' || !unicode.IsPrint(r) {
				k.add("name", ErrBadName, "contains whitespace or a non-printing character %U", r)
				break
			}
		}
	}

	var svc serviceURL
	if c.ServiceURL == "" {
		k.add("serviceURL", ErrMissingField, "must not be empty")
	} else {
		var reason string
		if svc, reason = parseServiceURL(c.ServiceURL); reason != "" {
			k.add("serviceURL", ErrBadURL, "%s", reason)
		}
	}
	if c.AdminURL != "" {
		if _, reason := parseAdminURL(c.AdminURL); reason != "" {
			k.add("adminURL", ErrBadURL, "%s", reason)
		}
	}

	if w := c.Weight; !(w > 0) || math.IsInf(w, 1) {
		k.add("weight", ErrBadWeight, "must be a finite number > 0, got %v", w)
	}

	c.Auth.check(k)
	c.TLS.check(k, svc)
	c.Client.check(k)
	c.Producer.check(k)
	return svc
}

func (a *Auth) check(k *checker) {
	if a.Token != "" && a.TokenFile != "" {
		k.add("auth", ErrConflict, "token and tokenFile are both set; set one")
	}
	for _, r := range a.Token {
		if unicode.IsSpace(r) || !unicode.IsPrint(r) {
			k.add("auth.token", ErrBadSetting, "contains whitespace or a non-printing character")
			break
		}
	}
	if a.TokenFile != "" {
		if reason := checkFile(a.TokenFile, true); reason != "" {
			k.add("auth.tokenFile", ErrUnreadableFile, "%s", reason)
		}
	}
}

// check validates the TLS material; svc is the cluster's parsed service
// URL, zero (no endpoints) when invalid.
func (t *TLS) check(k *checker, svc serviceURL) {
	switch {
	case t.CertFile != "" && t.KeyFile == "":
		k.add("tls.keyFile", ErrConflict, "certFile is set but keyFile is not")
	case t.CertFile == "" && t.KeyFile != "":
		k.add("tls.certFile", ErrConflict, "keyFile is set but certFile is not")
	}
	for _, f := range []struct{ field, path string }{
		{"tls.caFile", t.CAFile},
		{"tls.certFile", t.CertFile},
		{"tls.keyFile", t.KeyFile},
	} {
		if f.path == "" {
			continue
		}
		if reason := checkFile(f.path, false); reason != "" {
			k.add(f.field, ErrUnreadableFile, "%s", reason)
		}
	}
	if len(svc.endpoints) > 0 && !svc.tls && *t != (TLS{}) {
		k.add("tls", ErrConflict, "TLS settings are ignored on a plaintext pulsar:// serviceURL; use pulsar+ssl://")
	}
}

func (s *ClientSettings) check(k *checker) {
	if s.OperationTimeout < 0 {
		k.add("client.operationTimeout", ErrBadSetting, "must not be negative, got %v", s.OperationTimeout)
	}
	if s.ConnectionTimeout < 0 {
		k.add("client.connectionTimeout", ErrBadSetting, "must not be negative, got %v", s.ConnectionTimeout)
	}
	if s.ConnectionsPerBroker < 0 {
		k.add("client.connectionsPerBroker", ErrBadSetting, "must not be negative, got %d", s.ConnectionsPerBroker)
	}
}

func (s *ProducerSettings) check(k *checker) {
	if s.SendTimeout < 0 {
		k.add("producer.sendTimeout", ErrBadSetting, "must not be negative, got %v", s.SendTimeout)
	}
	if s.Linger < 0 {
		k.add("producer.linger", ErrBadSetting, "must not be negative, got %v", s.Linger)
	}
	if s.BatchMaxMessages < 0 {
		k.add("producer.batchMaxMessages", ErrBadSetting, "must not be negative, got %d", s.BatchMaxMessages)
	}
	if s.BatchMaxBytes < 0 {
		k.add("producer.batchMaxBytes", ErrBadSetting, "must not be negative, got %d", s.BatchMaxBytes)
	}
	if s.Compression != "" && !slices.Contains(Codecs, s.Compression) {
		k.add("producer.compression", ErrBadSetting, "%q is not one of %v", s.Compression, Codecs)
	}
}
