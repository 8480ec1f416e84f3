package testbed

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
)

// tokenHeader is the JOSE header of every token: the one Pulsar's own
// "tokens create" writes for a secret key.
const tokenHeader = `{"alg":"HS256"}`

// SignToken returns a Pulsar token for role: a JWT with the claim
// {"sub": role}, no expiry, signed with HMAC-SHA256 under key. Brokers of a
// secure Bed accept it when key is the bed's key (see Bed.Token); tests
// sign with another key to get a well-formed token that brokers reject.
func SignToken(key []byte, role string) string {
	claims, _ := json.Marshal(struct { // a struct of one string cannot fail
		Sub string `json:"sub"`
	}{role})
	enc := base64.RawURLEncoding
	signed := enc.EncodeToString([]byte(tokenHeader)) + "." + enc.EncodeToString(claims)
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(signed))
	return signed + "." + enc.EncodeToString(mac.Sum(nil))
}

// Token returns a token for role that the bed's brokers accept. It returns
// ErrNotSecure when the bed was not started with Options.Secure, and
// ErrBadOptions for an empty role.
func (b *Bed) Token(role string) (string, error) {
	if b.sec == nil {
		return "", ErrNotSecure
	}
	if role == "" {
		return "", fmt.Errorf("%w: empty token role", ErrBadOptions)
	}
	return SignToken(b.sec.key, role), nil
}
