package topology

import "strings"

// Environment variable suffixes recognised by ApplyEnv, after EnvPrefix.
const (
	EnvServiceURL = "SERVICE_URL"
	EnvAdminURL   = "ADMIN_URL"
	EnvToken      = "TOKEN"
	EnvTokenFile  = "TOKEN_FILE"
)

// EnvPrefix returns the prefix of the environment variables that override
// the cluster called name: "KEYROUTE_CLUSTER_", then name with ASCII
// letters upper-cased and each rune that is not an ASCII letter or digit
// replaced by '_', then a final '_'.
//
//	EnvPrefix("east-1")  == "KEYROUTE_CLUSTER_EAST_1_"
//	EnvPrefix("eu.west") == "KEYROUTE_CLUSTER_EU_WEST_"
func EnvPrefix(name string) string {
	var b strings.Builder
	b.Grow(len("KEYROUTE_CLUSTER_") + len(name) + 1)
	b.WriteString("KEYROUTE_CLUSTER_")
	for _, r := range name {
		switch {
		case 'a' <= r && r <= 'z':
			b.WriteRune(r - 'a' + 'A')
		case 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	b.WriteByte('_')
	return b.String()
}

// ApplyEnv overrides cluster URLs and secrets from environment variables
// read through lookup (os.LookupEnv in Load and Parse; tests pass their
// own). For each cluster with a non-empty Name, with P = EnvPrefix(Name):
//
//	P+"SERVICE_URL"  replaces ServiceURL
//	P+"ADMIN_URL"    replaces AdminURL
//	P+"TOKEN"        replaces Auth: Token is set, TokenFile cleared
//	P+"TOKEN_FILE"   replaces Auth: TokenFile is set, Token cleared
//
// A variable that is unset or set to the empty string changes nothing.
// Setting both TOKEN and TOKEN_FILE sets both fields, which Validate
// rejects with ErrConflict. Clusters without a name are skipped. ApplyEnv
// does not validate; call Validate afterwards. A nil lookup does nothing.
func (t *Topology) ApplyEnv(lookup func(string) (string, bool)) {
	if t == nil || lookup == nil {
		return
	}
	get := func(key string) (string, bool) {
		v, ok := lookup(key)
		return v, ok && v != ""
	}
	for i := range t.Clusters {
		c := &t.Clusters[i]
		if c.Name == "" {
			continue
		}
		p := EnvPrefix(c.Name)
		if v, ok := get(p + EnvServiceURL); ok {
			c.ServiceURL = v
		}
		if v, ok := get(p + EnvAdminURL); ok {
			c.AdminURL = v
		}
		token, okToken := get(p + EnvToken)
		file, okFile := get(p + EnvTokenFile)
		if okToken || okFile {
			c.Auth = Auth{Token: token, TokenFile: file}
		}
	}
}
