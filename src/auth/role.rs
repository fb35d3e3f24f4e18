//! The roles a token can grant. They nest: `admin` may do everything `read-write` may, and
//! `read-write` everything `read-only` may, so a route names the least role it needs.

use std::fmt;

/// A role, ordered from least to most trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    /// Reads: status, resources, messages, consumer groups, dead letters, traces.
    ReadOnly,
    /// Moves messages: push, pop, ack, lease, configure, transaction.
    ReadWrite,
    /// Changes or destroys what others rely on: maintenance, every delete, seek, retry.
    Admin,
}

impl Role {
    /// The role a claim value names (`read-only`, `read-write`, `admin`), if any. Other
    /// values are roles of other systems and grant nothing here.
    pub fn parse(name: &str) -> Option<Role> {
        match name.trim() {
            "read-only" => Some(Role::ReadOnly),
            "read-write" => Some(Role::ReadWrite),
            "admin" => Some(Role::Admin),
            _ => None,
        }
    }

    /// The role's name as tokens and the README spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::ReadOnly => "read-only",
            Role::ReadWrite => "read-write",
            Role::Admin => "admin",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_parse_by_name_and_nest_by_order() {
        assert_eq!(Role::parse("admin"), Some(Role::Admin));
        assert_eq!(Role::parse("read-only"), Some(Role::ReadOnly));
        assert_eq!(Role::parse("superuser"), None);
        assert!(Role::Admin > Role::ReadWrite && Role::ReadWrite > Role::ReadOnly);
        for role in [Role::ReadOnly, Role::ReadWrite, Role::Admin] {
            assert_eq!(Role::parse(role.as_str()), Some(role));
        }
    }
}
