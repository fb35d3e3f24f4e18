//! Validated names: queues, partitions, consumer groups and tenants.
//!
//! Names travel raw in URL paths (the published clients do not encode them), so a name may
//! not contain `/`, `?` or `#`, nor control characters, and must fit the binary formats'
//! `u16` length prefix with room to spare.

use std::fmt;
use std::sync::Arc;

/// The sentinel consumer group of queue mode (a shared work queue).
pub const QUEUE_MODE: &str = "__QUEUE_MODE__";

/// Longest accepted name, in bytes.
pub const MAX_NAME_BYTES: usize = 512;

/// Why a name was refused.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum NameError {
    /// Empty or whitespace only.
    #[error("{kind} name must not be empty")]
    Empty {
        /// Queue, partition or consumer group.
        kind: &'static str,
    },
    /// Longer than [`MAX_NAME_BYTES`].
    #[error("{kind} name is longer than {MAX_NAME_BYTES} bytes")]
    TooLong {
        /// Queue, partition or consumer group.
        kind: &'static str,
    },
    /// Contains `/`, `?`, `#` or a control character.
    #[error("{kind} name must not contain '/', '?', '#' or control characters")]
    BadCharacter {
        /// Queue, partition or consumer group.
        kind: &'static str,
    },
}

fn check(kind: &'static str, value: &str) -> Result<(), NameError> {
    if value.trim().is_empty() {
        return Err(NameError::Empty { kind });
    }
    if value.len() > MAX_NAME_BYTES {
        return Err(NameError::TooLong { kind });
    }
    if value
        .chars()
        .any(|c| matches!(c, '/' | '?' | '#') || c.is_control())
    {
        return Err(NameError::BadCharacter { kind });
    }
    Ok(())
}

macro_rules! name_type {
    ($(#[$doc:meta])* $name:ident, $kind:literal) => {
        $(#[$doc])*
        ///
        /// Shared, not owned: a binary push clones its group's names into every item, so a
        /// clone must cost a reference count, not a copy of up to [`MAX_NAME_BYTES`] (a body
        /// of 5-byte items under long names once cost the broker 400 bytes per wire byte).
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(Arc<str>);

        impl $name {
            /// Validates and wraps a name.
            pub fn parse(value: impl Into<String>) -> Result<Self, NameError> {
                let value = value.into();
                check($kind, &value)?;
                Ok(Self(Arc::from(value)))
            }

            /// The name as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

name_type!(
    /// A queue's name (unique within a tenant).
    QueueName,
    "queue"
);
name_type!(
    /// A partition's name (unique within a queue); `Default` when a push names none.
    PartitionName,
    "partition"
);

impl PartitionName {
    /// The partition a push lands in when it names none.
    pub fn default_partition() -> Self {
        Self(Arc::from("Default"))
    }
}

/// A consumer group; queue mode is the sentinel group [`QUEUE_MODE`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConsumerGroup(String);

impl ConsumerGroup {
    /// Queue mode: one shared cursor, every message to one consumer.
    pub fn queue_mode() -> Self {
        Self(QUEUE_MODE.to_owned())
    }

    /// Validates a group name; `None` or the sentinel itself means queue mode.
    pub fn parse(value: Option<&str>) -> Result<Self, NameError> {
        match value {
            None => Ok(Self::queue_mode()),
            Some(v) => {
                check("consumer group", v)?;
                Ok(Self(v.to_owned()))
            }
        }
    }

    /// The group as stored and answered.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// True for the shared work-queue group.
    pub fn is_queue_mode(&self) -> bool {
        self.0 == QUEUE_MODE
    }
}

/// The tenant a request acts for: the default tenant (the empty string) without
/// authentication, the token's tenant claim with it; it is part of every key so tenants
/// can never collide.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tenant(String);

impl Tenant {
    /// The tenant of unauthenticated deployments.
    pub fn default_tenant() -> Self {
        Self(String::new())
    }

    /// A tenant named by a verified token's claim, validated like every other name (so it
    /// can never be the default tenant's empty name). Never call it on request data a
    /// caller controls: a request cannot name a tenant, only its token can.
    pub fn parse(value: impl Into<String>) -> Result<Self, NameError> {
        let value = value.into();
        check("tenant", &value)?;
        Ok(Self(value))
    }

    /// True for the tenant of unauthenticated deployments (and of tokens without a tenant).
    pub fn is_default(&self) -> bool {
        self.0.is_empty()
    }

    /// A tenant as stored or as carried by a peer's mesh hint; never from a request, so a
    /// caller cannot name another tenant.
    pub fn from_stored(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The tenant as stored.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_with_path_characters_or_blanks_are_refused() {
        for bad in ["", "  ", "a/b", "a?b", "a#b", "tab\there"] {
            assert!(QueueName::parse(bad).is_err(), "{bad:?} accepted");
        }
        assert!(QueueName::parse("x".repeat(MAX_NAME_BYTES + 1)).is_err());
        assert_eq!(
            QueueName::parse("orders.eu-1 v2").unwrap().as_str(),
            "orders.eu-1 v2"
        );
    }

    #[test]
    fn an_absent_group_is_queue_mode() {
        assert!(ConsumerGroup::parse(None).unwrap().is_queue_mode());
        assert!(!ConsumerGroup::parse(Some("analytics"))
            .unwrap()
            .is_queue_mode());
        assert!(ConsumerGroup::parse(Some("")).is_err());
    }

    #[test]
    fn a_tenant_claim_is_checked_like_a_name_and_never_the_default() {
        assert_eq!(Tenant::parse("acme").unwrap().as_str(), "acme");
        assert!(!Tenant::parse("acme").unwrap().is_default());
        assert!(Tenant::default_tenant().is_default());
        for bad in ["", " ", "a/b", "x\n"] {
            assert!(Tenant::parse(bad).is_err(), "{bad:?}");
        }
    }
}
