package topology

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// serviceURL is a parsed Pulsar binary-protocol URL.
type serviceURL struct {
	tls bool
	// endpoints are the brokers as lower-cased "host:port", default ports
	// filled in, in the order given.
	endpoints []string
}

// parseServiceURL checks raw the way pulsar-client-go v0.21.0 reads it:
// pulsar:// or pulsar+ssl://, then one or more hosts separated by ',' or
// ';', each with an optional port (default 6650, or 6651 for pulsar+ssl).
// Unlike the client, it rejects user info, paths, queries and fragments,
// which the client ignores. On failure it returns a reason safe to show.
func parseServiceURL(raw string) (serviceURL, string) {
	if reason := checkSpaces(raw); reason != "" {
		return serviceURL{}, reason
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return serviceURL{}, "missing scheme; want pulsar:// or pulsar+ssl://"
	}
	var u serviceURL
	port := "6650"
	switch strings.ToLower(scheme) {
	case "pulsar":
	case "pulsar+ssl":
		u.tls, port = true, "6651"
	default:
		return serviceURL{}, fmt.Sprintf("scheme %q is not pulsar:// or pulsar+ssl://", scheme)
	}
	authority, suffix := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, suffix = rest[:i], rest[i:]
	}
	if suffix != "" && suffix != "/" {
		return serviceURL{}, "must not have a path, query or fragment"
	}
	if strings.Contains(authority, "@") {
		return serviceURL{}, "must not contain user info"
	}
	if authority == "" {
		return serviceURL{}, "missing host"
	}
	for _, h := range strings.FieldsFunc(authority, func(r rune) bool { return r == ',' || r == ';' }) {
		ep, reason := endpoint(h, port)
		if reason != "" {
			return serviceURL{}, reason
		}
		u.endpoints = append(u.endpoints, ep)
	}
	if len(u.endpoints) == 0 {
		return serviceURL{}, "missing host"
	}
	return u, ""
}

// endpoint returns "host:port" for one element of a host list, with the
// host lower-cased and defPort used when the port is omitted.
func endpoint(h, defPort string) (string, string) {
	host, port := h, defPort
	switch {
	case strings.HasPrefix(h, "["):
		end := strings.IndexByte(h, ']')
		if end < 0 {
			return "", fmt.Sprintf("host %q: missing ']'", h)
		}
		host = h[1:end]
		if tail := h[end+1:]; tail != "" {
			p, ok := strings.CutPrefix(tail, ":")
			if !ok {
				return "", fmt.Sprintf("host %q: unexpected text after ']'", h)
			}
			port = p
		}
		if a, err := netip.ParseAddr(host); err != nil || !a.Is6() {
			return "", fmt.Sprintf("host %q: not an IPv6 address", h)
		}
	case strings.Contains(h, ":"):
		var err error
		if host, port, err = net.SplitHostPort(h); err != nil {
			return "", fmt.Sprintf("host %q: want host or host:port (IPv6 in brackets)", h)
		}
		if reason := checkHostName(host); reason != "" {
			return "", reason
		}
	default:
		if reason := checkHostName(host); reason != "" {
			return "", reason
		}
	}
	if reason := checkPort(port); reason != "" {
		return "", reason
	}
	return net.JoinHostPort(strings.ToLower(host), port), ""
}

// checkHostName accepts DNS names and IPv4 addresses: ASCII letters,
// digits, '-', '_' and '.'.
func checkHostName(host string) string {
	if host == "" {
		return "missing host"
	}
	for _, r := range host {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9',
			r == '-', r == '_', r == '.':
		default:
			return fmt.Sprintf("host %q is not a valid host name", host)
		}
	}
	return ""
}

func checkPort(port string) string {
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 || port[0] == '+' {
		return fmt.Sprintf("port %q is not a number from 1 to 65535", port)
	}
	return ""
}

// parseAdminURL checks an http:// or https:// URL and returns a canonical
// form for duplicate detection: lower-cased scheme and host, explicit port,
// no trailing slash.
func parseAdminURL(raw string) (string, string) {
	if reason := checkSpaces(raw); reason != "" {
		return "", reason
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error repeats the whole input; keep only the cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return "", fmt.Sprintf("cannot parse: %v", err)
	}
	var port string
	switch strings.ToLower(u.Scheme) {
	case "http":
		port = "80"
	case "https":
		port = "443"
	default:
		return "", fmt.Sprintf("scheme %q is not http:// or https://", u.Scheme)
	}
	if u.User != nil {
		return "", "must not contain user info"
	}
	if u.Opaque != "" || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		return "", "must not have a query or fragment"
	}
	host := u.Hostname()
	if host == "" {
		return "", "missing host"
	}
	if p := u.Port(); p != "" {
		port = p
	} else if strings.HasSuffix(u.Host, ":") {
		return "", "empty port"
	}
	if reason := checkPort(port); reason != "" {
		return "", reason
	}
	if !strings.HasPrefix(u.Host, "[") {
		if reason := checkHostName(host); reason != "" {
			return "", reason
		}
	}
	return strings.ToLower(u.Scheme) + "://" + net.JoinHostPort(strings.ToLower(host), port) +
		strings.TrimRight(u.EscapedPath(), "/"), ""
}

// checkSpaces rejects leading or trailing whitespace, a common slip in
// environment variables.
func checkSpaces(s string) string {
	if strings.TrimSpace(s) != s {
		return "has leading or trailing whitespace"
	}
	return ""
}
