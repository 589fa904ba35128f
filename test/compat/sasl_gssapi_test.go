package compat

import (
	"fmt"
	"testing"

	"github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/twmb/franz-go/pkg/sasl/kerberos"

	"github.com/vltava/vltava/internal/testing/kdc"
)

// TestSASLGSSAPI: Kerberos against a real MIT KDC started for the test.
// The broker accepts tickets for kafka/127.0.0.1 with its keytab; franz-go
// (gokrb5), librdkafka and kcat (Cyrus SASL's GSSAPI plugin, kinit from a
// keytab) and kafka-python (python3-gssapi, from a ticket cache)
// authenticate as alice and read back what they wrote.
func TestSASLGSSAPI(t *testing.T) {
	t.Parallel()
	k := kdc.Start(t)
	k.AddService(t, "kafka/127.0.0.1")
	k.AddService(t, "alice")
	brokerKeytab := k.Keytab(t, "broker.keytab", "kafka/127.0.0.1")
	aliceKeytab := k.Keytab(t, "alice.keytab", "alice")
	krbEnv := []string{"KRB5_CONFIG=" + k.Krb5Conf}
	b := startSASLBroker(t, "GSSAPI", map[string]string{
		"sasl.jaas.config": fmt.Sprintf(`com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true keyTab="%s" principal="kafka/127.0.0.1@%s";`, brokerKeytab, k.Realm),
	}, map[string]string{"sasl.kerberos.service.name": "kafka"}, krbEnv...)

	librdkafka := map[string]string{
		"security.protocol":          "SASL_PLAINTEXT",
		"sasl.mechanisms":            "GSSAPI",
		"sasl.kerberos.service.name": "kafka",
		"sasl.kerberos.keytab":       aliceKeytab,
		"sasl.kerberos.principal":    k.Principal("alice"),
		"sasl.kerberos.kinit.cmd":    "kinit -k -t %{sasl.kerberos.keytab} %{sasl.kerberos.principal}",
	}
	t.Run("franz-go", func(t *testing.T) {
		cfg, err := config.Load(k.Krb5Conf)
		if err != nil {
			t.Fatal(err)
		}
		kt, err := keytab.Load(aliceKeytab)
		if err != nil {
			t.Fatal(err)
		}
		cl := client.NewWithKeytab("alice", k.Realm, kt, cfg, client.DisablePAFXFAST(true))
		defer cl.Destroy()
		b.franzRoundTrip(t, kerberos.Auth{Client: cl, Service: "kafka"}.AsMechanism(), 50)
	})
	t.Run("librdkafka", func(t *testing.T) { b.librdkafkaRoundTrip(t, librdkafka, k.Env()...) })
	t.Run("kcat", func(t *testing.T) { b.kcatRoundTrip(t, librdkafka, k.Env()...) })
	t.Run("kafka-python", func(t *testing.T) {
		requirePythonModule(t, "gssapi", "python3-gssapi")
		requirePythonModule(t, "kafka", "python3-kafka")
		k.Kinit(t, "alice", aliceKeytab)
		topic := b.createTopic(t)
		var res struct {
			Consumed []string `json:"consumed"`
		}
		runPythonEnv(t, k.Env(), &res, "sasl_kafka_python.py", b.sasl, topic, "20", "kafka")
		checkValues(t, "kafka-python", res.Consumed, 20)
	})
}
