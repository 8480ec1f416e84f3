//go:build e2e

package consumerparity

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/pulsar-client-go/pulsar/crypto"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/producer"
)

// keyName is the name the producer gives its key.
const keyName = "consumer-parity-key"

// keyReader writes a new RSA key pair in the PEM forms pulsar-client-go's
// default MessageCrypto parses and returns a reader of it.
func keyReader() crypto.KeyReader {
	GinkgoHelper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	Expect(err).NotTo(HaveOccurred())
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	Expect(err).NotTo(HaveOccurred())
	dir := GinkgoT().TempDir()
	pub, priv := filepath.Join(dir, "public.pem"), filepath.Join(dir, "private.pem")
	Expect(os.WriteFile(pub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600)).To(Succeed())
	Expect(os.WriteFile(priv, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600)).To(Succeed())
	return crypto.NewFileKeyReader(pub, priv)
}

var _ = Describe("Decryption", func() {
	It("reads back in clear what the producer encrypted, on every cluster; a wrong key delivers ciphertext (CryptoConsume) or nothing (CryptoDiscard)", func(sctx SpecContext) {
		ctx := specCtx(sctx, 3*time.Minute)
		keys := keyReader()
		topic := newTopic(ctx, "decrypt")
		const n = 40
		want := map[string]string{}
		p := openProducer(ctx, topic, producer.Encryption(keys, keyName))
		clustersUsed := map[string]bool{}
		for i := range n {
			key := fmt.Sprint("k-", i)
			want[key] = strings.Repeat("plaintext "+key+" ", 10)
			id, err := p.Send(ctx, &producer.Message{Key: key, Value: []byte(want[key])})
			Expect(err).NotTo(HaveOccurred())
			clustersUsed[id.Cluster] = true
		}
		Expect(clustersUsed).To(HaveLen(clusters), "the keys span every cluster")

		By("the right key: every message in clear")
		c := openConsumer(ctx, topic, "clear", consumer.Decryption(keys, consumer.CryptoFail))
		for _, m := range receiveN(ctx, c, n) {
			Expect(string(m.Value)).To(Equal(want[m.Key]), m.Key)
			Expect(m.Raw().GetEncryptionContext()).To(BeNil(), m.Key)
		}

		By("a wrong key with CryptoConsume: the ciphertext, marked encrypted")
		wrong := keyReader()
		c = openConsumer(ctx, topic, "consume", consumer.Decryption(wrong, consumer.CryptoConsume))
		for _, m := range receiveN(ctx, c, n) {
			Expect(string(m.Value)).NotTo(ContainSubstring("plaintext"), m.Key)
			Expect(m.Raw().GetEncryptionContext()).NotTo(BeNil(), m.Key)
		}

		By("a wrong key with CryptoDiscard: nothing delivered, and the messages are acknowledged")
		c = openConsumer(ctx, topic, "discard", consumer.Decryption(wrong, consumer.CryptoDiscard), consumer.AckGrouping(0, 0))
		marker := openProducer(ctx, topic)
		for _, cl := range bed.Clusters() {
			key := keyOn(marker, cl.Name)
			_, err := marker.Send(ctx, &producer.Message{Key: key, Value: []byte("marker")})
			Expect(err).NotTo(HaveOccurred())
		}
		for range clusters {
			m, err := c.Receive(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(m.Value)).To(Equal("marker"), "only the clear markers come: the encrypted ones were discarded")
			Expect(c.Ack(ctx, m)).To(Succeed())
		}
		Eventually(ctx, func() int64 {
			var sum int64
			for _, h := range c.Health(ctx) {
				sum += max(h.Backlog, 0)
			}
			return sum
		}).Should(BeZero(), "the discarded messages are acknowledged")
	})
})

// keyOn returns a key that p routes to the named cluster.
func keyOn(p *producer.Producer, cluster string) string {
	GinkgoHelper()
	for i := range 10_000 {
		key := fmt.Sprint("marker-", i)
		if c, _ := p.Placement(key); c == cluster {
			return key
		}
	}
	Fail("no key routes to " + cluster)
	return ""
}
