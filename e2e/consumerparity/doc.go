// Package consumerparity is the e2e suite of the keyroute consumer's
// options that match pulsar-client-go's ConsumerOptions, each checked on
// real local Pulsar clusters with what keyroute's producer writes:
//
//   - Decryption: messages the producer encrypted (its Encryption option)
//     are read back in clear with the private key; with a key that cannot
//     read them, CryptoConsume delivers the ciphertext with its encryption
//     context and CryptoDiscard delivers nothing and acknowledges them;
//   - Schema and Typed[T]: values the producer's Typed[T] sent with a JSON
//     schema are read back as the same values.
package consumerparity
