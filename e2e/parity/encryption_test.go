//go:build e2e

package parity

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/crypto"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"

	"github.com/keyroute/keyroute/producer"
)

// keyName is the name the encryption specs give their key.
const keyName = "parity-key"

// keyPair writes a new RSA key pair in the PEM forms pulsar-client-go
// v0.21.0's default MessageCrypto parses (crypto/default_message_crypto.go:
// the public key with x509.ParsePKIXPublicKey, "PUBLIC KEY"; the private
// key with x509.ParsePKCS1PrivateKey, "RSA PRIVATE KEY") and returns their
// paths.
func keyPair() (pub, priv string) {
	GinkgoHelper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	Expect(err).NotTo(HaveOccurred())
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	Expect(err).NotTo(HaveOccurred())
	dir := GinkgoT().TempDir()
	pub, priv = filepath.Join(dir, "public.pem"), filepath.Join(dir, "private.pem")
	Expect(os.WriteFile(pub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600)).To(Succeed())
	Expect(os.WriteFile(priv, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600)).To(Succeed())
	return pub, priv
}

// decryptFailures counts the decryption failures a pulsar-client-go
// consumer logged.
func decryptFailures(logs *gbytes.Buffer) int {
	return strings.Count(string(logs.Contents()), "consuming message failed due to decryption err")
}

var _ = Describe("Encryption", func() {
	It("encrypts end to end: a plain consumer with the private key reads the plaintext, batched and unbatched; the broker holds only ciphertext", func(sctx SpecContext) {
		ctx := specCtx(sctx, 2*time.Minute)
		pub, priv := keyPair()
		topic := newTopic(ctx, "", "encrypted")
		want := map[string]string{}
		ids := map[string]producer.ID{}
		for _, batching := range []bool{true, false} {
			p := openProducer(ctx, topic, producer.Batching(batching), producer.Encryption(crypto.NewFileKeyReader(pub, priv), keyName))
			for i := range 10 {
				key := "enc-" + strconv.FormatBool(batching) + "-" + strconv.Itoa(i)
				value := strings.Repeat("plaintext "+key+" ", 20)
				id, err := p.Send(ctx, &producer.Message{Key: key, Value: []byte(value)})
				Expect(err).NotTo(HaveOccurred(), key)
				want[key], ids[key] = value, id
			}
		}
		got := byKey(drainAll(ctx, topic, pulsar.ConsumerOptions{Decryption: &pulsar.MessageDecryptionInfo{
			KeyReader:                   crypto.NewFileKeyReader(pub, priv),
			ConsumerCryptoFailureAction: crypto.ConsumerCryptoFailureActionFail,
		}}))
		Expect(got).To(HaveLen(len(want)))
		for key, value := range want {
			m := got[key]
			Expect(string(m.Payload())).To(Equal(value), key)
			// pulsar-client-go fills the EncryptionContext only for a
			// message it hands over undecrypted (ConsumerCryptoFailureActionConsume).
			Expect(m.GetEncryptionContext()).To(BeNil(), key)
			id := ids[key]
			e := storedEntry(ctx, clusterNamed(id.Cluster), topic, id.Partition, id.MessageID)
			Expect(e.header.Get("X-Pulsar-Is-Encrypted")).To(Equal("true"), key)
			keys, err := base64.StdEncoding.DecodeString(e.header.Get("X-Pulsar-Base64-encryption-keys"))
			Expect(err).NotTo(HaveOccurred(), key)
			Expect(bytes.Contains(keys, []byte(keyName))).To(BeTrue(), "%s: the broker's copy names the key", key)
			Expect(bytes.Contains(e.body, []byte("plaintext"))).To(BeFalse(), "%s: the broker's copy is not plaintext", key)
		}
	})

	// pulsar-client-go's newProducer (producer_impl.go) stores the
	// MessageCrypto it makes in the ProducerEncryptionInfo it is given when
	// it finds none there. Were the writers to share one struct, the first
	// writer created, on whichever cluster, would make it and every other
	// writer take it over: one data key for all clusters, a check-then-store
	// racing on New's per-cluster goroutines, and every writer's errors
	// naming the first writer's partition (seen here before the fix: a
	// message on partition 1 failed with an error naming
	// "...-partition-0"). The SDK gives each writer its own copy.
	It("gives every writer of every cluster its own ProducerEncryptionInfo, so each keeps its own MessageCrypto", func(sctx SpecContext) {
		ctx := specCtx(sctx, 2*time.Minute)
		pub, priv := keyPair()
		topic := newTopic(ctx, "", "encrypted-shared")
		var infos []*pulsar.ProducerEncryptionInfo
		var mu sync.Mutex
		openProducer(ctx, topic, producer.Encryption(crypto.NewFileKeyReader(pub, priv), keyName),
			producer.ConfigureWriter(func(_ string, _ int, o *pulsar.ProducerOptions) {
				mu.Lock()
				infos = append(infos, o.Encryption)
				mu.Unlock()
			}))
		Expect(infos).To(HaveLen(clusters * partitions))
		seen := map[*pulsar.ProducerEncryptionInfo]bool{}
		cryptos := map[any]bool{}
		for _, info := range infos {
			Expect(seen[info]).To(BeFalse(), "two writers share one ProducerEncryptionInfo")
			seen[info] = true
			Expect(info.MessageCrypto).NotTo(BeNil(), "pulsar-client-go stored the writer's MessageCrypto")
			cryptos[info.MessageCrypto] = true
		}
		Expect(cryptos).To(HaveLen(len(infos)), "each writer has a MessageCrypto of its own")
	})

	// pulsar-client-go v0.21.0, consumer_partition.go MessageReceived: a
	// consumer without Decryption gets a noop decryptor, which fails on an
	// encrypted message, and the default ConsumerCryptoFailureAction is
	// Fail: the message is logged, nacked and never handed to the
	// application; after NackRedeliveryDelay it comes again and fails
	// again.
	It("PINS pulsar-client-go v0.21.0: a plain consumer without the key never hands the message over; it nacks it, so it fails again after NackRedeliveryDelay", func(sctx SpecContext) {
		ctx := specCtx(sctx, 2*time.Minute)
		pub, priv := keyPair()
		topic := newTopic(ctx, "", "encrypted-nokey")
		target := bed.Clusters()[0]
		enc := openProducer(ctx, topic, producer.Encryption(crypto.NewFileKeyReader(pub, priv), keyName))
		plainP := openProducer(ctx, topic)
		key := keyOn(enc, "nokey-", target.Name)
		logs := gbytes.NewBuffer()
		const nackDelay = time.Second
		sub := subscribe(target, plainClient(target, logs), pulsar.ConsumerOptions{Topic: topic, NackRedeliveryDelay: nackDelay})

		_, err := enc.Send(ctx, &producer.Message{Key: key, Value: []byte("secret")})
		Expect(err).NotTo(HaveOccurred())
		trailer := func(v string) {
			GinkgoHelper()
			_, err := plainP.Send(ctx, &producer.Message{Key: key, Value: []byte(v)})
			Expect(err).NotTo(HaveOccurred())
			m, err := sub.cons.Receive(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(m.Payload())).To(Equal(v), "nothing before the trailer: the encrypted message is not handed over")
			Expect(sub.cons.Ack(m)).To(Succeed())
		}
		trailer("trailer-1")
		Expect(decryptFailures(logs)).To(BeNumerically(">=", 1), "the consumer's log:\n%s", logs.Contents())
		t0 := time.Now()
		Eventually(ctx, func() int { return decryptFailures(logs) }).Should(BeNumerically(">=", 2), "redelivered after the nack")
		GinkgoWriter.Printf("failed again %s later (NackRedeliveryDelay %s)\n", time.Since(t0).Round(time.Millisecond), nackDelay)
		trailer("trailer-2")
	})

	It("fails a message whose key cannot be read rather than send it in clear, as not written (ErrEncryption)", func(sctx SpecContext) {
		ctx := specCtx(sctx, 2*time.Minute)
		topic := newTopic(ctx, "", "encrypted-nokeyfile")
		missing := filepath.Join(GinkgoT().TempDir(), "missing.pem")
		p := openProducer(ctx, topic, producer.Encryption(crypto.NewFileKeyReader(missing, missing), keyName))
		plainP := openProducer(ctx, topic)
		target := bed.Clusters()[0]
		key := keyOn(p, "nokeyfile-", target.Name)
		_, err := p.Send(ctx, &producer.Message{Key: key, Value: []byte("secret")})
		Expect(err).To(HaveOccurred())
		GinkgoWriter.Printf("Send: %v (reason %v, not written %v)\n", err, producer.Reason(err), producer.NotWritten(err))
		// pulsar-client-go reports the failure with a plain error
		// (internal/commands.go, "encryption of message failed"), which
		// the SDK recognises by its text (producer/internals.go).
		Expect(producer.Reason(err)).To(Equal(producer.ReasonEncryption))
		Expect(err).To(MatchError(producer.ErrEncryption))
		Expect(producer.NotWritten(err)).To(BeTrue())
		_, err = plainP.Send(ctx, &producer.Message{Key: key, Value: []byte("trailer")})
		Expect(err).NotTo(HaveOccurred())
		got := subscribe(target, plainClient(target, nil), pulsar.ConsumerOptions{Topic: topic}).drain(ctx)
		Expect(got).To(HaveLen(1))
		Expect(string(got[0].Payload())).To(Equal("trailer"), "nothing was sent, in clear or otherwise")
	})
})
