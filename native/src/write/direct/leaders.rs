//! A cluster as the producer sees it: its topics' partition counts and leaders (Metadata, asked
//! over a connection of its own, which also asks for coordinators), the idempotent producer's
//! id and epoch (InitProducerId; a transactional producer's comes from its coordinator), and
//! one connection to each leader for Produce requests, with the Produce version it speaks.

use std::collections::HashMap;

use super::config::ProduceConfig;
use crate::connection::broker::{Broker, Refusal};
use crate::connection::Connection;
use crate::protocol::error::error_name;
use crate::protocol::init_producer_id::{
    init_producer_id_request, parse_init_producer_id, INIT_PRODUCER_ID,
};
use crate::protocol::metadata::{metadata_request_creating, parse_metadata, Leaders, METADATA};
use crate::protocol::primitives::{Api, Header};
use crate::protocol::produce::{Spliced, PRODUCE};

/// A connection to a leader and the Produce version it speaks.
struct Open {
    broker: Broker,
    version: i16,
}

pub struct Cluster {
    connection: Connection,
    bootstrap: Vec<(String, u16)>,
    auto_create: bool,
    metadata: Leaders,
    open: HashMap<i32, Open>,
    control: Option<Broker>,
    /// The producer's id and epoch, once given.
    pub producer: Option<(i64, i16)>,
    /// A transactional producer: its id and epoch come from its transaction coordinator, never
    /// from a lookup.
    transactional: bool,
    /// Why the last lookup failed.
    pub last_error: Option<String>,
    /// A broker's refusal (authentication, TLS verification): no retry mends it, so the
    /// producer fails with it, as the Java producer fails its sends on an authentication error.
    pub refused: Option<String>,
    body: Vec<u8>,
}

impl Cluster {
    pub fn new(config: &ProduceConfig) -> Self {
        Cluster {
            connection: config.connection.clone(),
            bootstrap: config.bootstrap.clone(),
            auto_create: config.auto_create,
            metadata: Leaders::default(),
            open: HashMap::new(),
            control: None,
            producer: None,
            transactional: config.transactional_id.is_some(),
            last_error: None,
            refused: None,
            body: Vec::new(),
        }
    }

    /// The partition count of `topic`, once looked up without an error.
    pub fn partitions(&self, topic: &str) -> Option<i32> {
        self.metadata.partitions.get(topic).copied()
    }

    /// The leader of `topic`'s `partition`, when known.
    pub fn leader(&self, topic: &str, partition: i32) -> Option<i32> {
        let key = (topic.to_string(), partition);
        self.metadata.leaders.get(&key).copied()
    }

    /// The error a topic's lookup answered, if any.
    pub fn topic_error(&self, topic: &str) -> Option<i16> {
        let errors = self.metadata.errors.iter();
        errors.filter(|(t, _)| t == topic).map(|(_, e)| *e).next()
    }

    /// Ask for `topics`' partitions and leaders (and the producer id, when not yet given).
    pub fn refresh(&mut self, topics: &[String], config: &ProduceConfig) -> Result<(), String> {
        let _ = config;
        let names: Vec<&str> = topics.iter().map(String::as_str).collect();
        let create = self.auto_create;
        let request =
            |h: Header<'_>| metadata_request_creating(h.correlation, h.client_id, &names, create);
        let answered = self.control(METADATA, &request).and_then(|_| {
            parse_metadata(&self.body).map_err(|m| format!("a malformed Metadata answer: {}", m.0))
        });
        match answered {
            Ok(leaders) => {
                self.metadata = leaders;
                self.last_error = None;
            }
            Err(why) => {
                self.last_error = Some(why.clone());
                return Err(why);
            }
        }
        if self.producer.is_none() && !self.transactional {
            self.init_producer_id()?;
        }
        Ok(())
    }

    /// InitProducerId over the control connection: the producer's id and epoch.
    fn init_producer_id(&mut self) -> Result<(), String> {
        self.control(INIT_PRODUCER_ID, &|h| init_producer_id_request(h, None))?;
        let answer = parse_init_producer_id(&self.body)
            .map_err(|m| format!("a malformed InitProducerId answer: {}", m.0))?;
        if answer.error != 0 {
            let why = format!(
                "InitProducerId answered error code {} ({})",
                answer.error,
                error_name(answer.error)
            );
            self.last_error = Some(why.clone());
            return Err(why);
        }
        self.producer = Some((answer.id, answer.epoch));
        Ok(())
    }

    /// A request of `api` over the control connection, of the first of its versions the broker
    /// offers (`build` given the version, the correlation id and the client id): the version
    /// and the answer.
    pub fn control_request(
        &mut self,
        api: Api,
        build: &dyn Fn(Header<'_>) -> Vec<u8>,
    ) -> Result<(i16, Vec<u8>), String> {
        let version = self.control(api, build)?;
        Ok((version, self.body.clone()))
    }

    /// [`Self::control_request`], the answer left in `self.body`. The control connection is
    /// made to the first bootstrap server, or known broker, that answers and offers `api`.
    fn control(&mut self, api: Api, build: &dyn Fn(Header<'_>) -> Vec<u8>) -> Result<i16, String> {
        let mut body = std::mem::take(&mut self.body);
        let mut last = String::from("bootstrap.servers names no server");
        if let Some(mut broker) = self.control.take() {
            let version = broker.versions().pick(&api);
            if let Some(v) = version.filter(|_| !broker.expiring()) {
                if broker
                    .call(|c, id| build(Header::new(v, c, id)), &mut body)
                    .is_ok()
                {
                    self.control = Some(broker);
                    self.body = body;
                    return Ok(v);
                }
            }
        }
        let mut servers = self.bootstrap.clone();
        servers.extend(self.metadata.brokers.values().cloned());
        for (host, port) in servers {
            match Broker::connect(&host, port, &self.connection, &[METADATA, api]) {
                Ok(mut broker) => {
                    let v = broker
                        .versions()
                        .pick(&api)
                        .expect("offered: checked by connect");
                    match broker.call(|c, id| build(Header::new(v, c, id)), &mut body) {
                        Ok(()) => {
                            self.control = Some(broker);
                            self.body = body;
                            return Ok(v);
                        }
                        Err(no) => last = format!("{host}:{port}: {}", no.why),
                    }
                }
                Err(Refusal::Unreachable(why)) => last = why,
                Err(Refusal::Refused(why)) => {
                    self.refused = Some(why.clone());
                    last = why;
                    break;
                }
            }
        }
        self.body = body;
        self.last_error = Some(last.clone());
        Err(last)
    }

    /// Send the request `build` writes (given its header: the Produce version, the correlation
    /// id and the client id) to broker `id`, connecting first when needed; its correlation id.
    pub fn send<'a>(
        &mut self,
        id: i32,
        build: impl FnOnce(Header<'_>) -> Spliced<'a>,
    ) -> Result<i32, String> {
        if !self.open.contains_key(&id) {
            let open = self.connect(id)?;
            self.open.insert(id, open);
        }
        let open = self.open.get_mut(&id).expect("inserted above");
        let version = open.version;
        match open
            .broker
            .send(|c, client| build(Header::new(version, c, client)))
        {
            Ok(sent) => Ok(sent),
            Err(no) => {
                self.open.remove(&id);
                self.last_error = Some(no.why.clone());
                Err(no.why)
            }
        }
    }

    /// The answer to request `correlation` of broker `id` into `body`: the Produce version it
    /// was sent with.
    pub fn receive(
        &mut self,
        id: i32,
        correlation: i32,
        body: &mut Vec<u8>,
    ) -> Result<i16, String> {
        let open = self.open.get_mut(&id).ok_or("the connection was dropped")?;
        match open.broker.receive(correlation, body) {
            Ok(()) => Ok(open.version),
            Err(no) => {
                self.open.remove(&id);
                self.last_error = Some(no.why.clone());
                Err(no.why)
            }
        }
    }

    /// Drop the connection to broker `id` (it is made again when next needed).
    pub fn drop_connection(&mut self, id: i32) {
        self.open.remove(&id);
    }

    /// Drop every connection.
    pub fn close(&mut self) {
        self.open.clear();
        self.control = None;
    }

    fn connect(&mut self, id: i32) -> Result<Open, String> {
        let (host, port) = self
            .metadata
            .brokers
            .get(&id)
            .cloned()
            .ok_or_else(|| format!("broker {id} has no address"))?;
        let broker =
            Broker::connect(&host, port, &self.connection, &[PRODUCE]).map_err(|r| match r {
                Refusal::Unreachable(why) => why,
                Refusal::Refused(why) => {
                    self.refused = Some(why.clone());
                    why
                }
            });
        let broker = broker.inspect_err(|why| self.last_error = Some(why.clone()))?;
        let version = broker
            .versions()
            .pick(&PRODUCE)
            .expect("offered: checked by connect");
        Ok(Open { broker, version })
    }
}
