package consumertest

import (
	"errors"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// Message is a message to publish on a fake cluster: what a producer
// sets. A zero PublishTime is the time of Publish.
type Message struct {
	Key         string
	OrderingKey string
	Value       []byte
	Properties  map[string]string
	EventTime   time.Time
	PublishTime time.Time
}

// stored is a published message in a partition's log.
type stored struct {
	Message
	id pulsar.MessageID
}

// delivery is one delivery of a stored message to a consumer: a
// pulsar.Message.
type delivery struct {
	*stored
	topic string
	count uint32 // RedeliveryCount
}

var _ pulsar.Message = (*delivery)(nil)

// errNoSchema is GetSchemaValue's error: the fake carries no schema.
var errNoSchema = errors.New("consumertest: messages carry no schema")

func (d *delivery) Topic() string                                   { return d.topic }
func (d *delivery) ProducerName() string                            { return "consumertest" }
func (d *delivery) Properties() map[string]string                   { return d.Message.Properties }
func (d *delivery) Payload() []byte                                 { return d.Value }
func (d *delivery) IsNullValue() bool                               { return false }
func (d *delivery) ID() pulsar.MessageID                            { return d.id }
func (d *delivery) PublishTime() time.Time                          { return d.Message.PublishTime }
func (d *delivery) EventTime() time.Time                            { return d.Message.EventTime }
func (d *delivery) Key() string                                     { return d.Message.Key }
func (d *delivery) OrderingKey() string                             { return d.Message.OrderingKey }
func (d *delivery) RedeliveryCount() uint32                         { return d.count }
func (d *delivery) IsReplicated() bool                              { return false }
func (d *delivery) GetReplicatedFrom() string                       { return "" }
func (d *delivery) GetSchemaValue(any) error                        { return errNoSchema }
func (d *delivery) SchemaVersion() []byte                           { return nil }
func (d *delivery) GetEncryptionContext() *pulsar.EncryptionContext { return nil }
func (d *delivery) Index() *uint64                                  { return nil }
func (d *delivery) BrokerPublishTime() *time.Time                   { return nil }
