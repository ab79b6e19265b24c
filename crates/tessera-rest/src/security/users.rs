//! The users file behind HTTP basic authentication: who may log in (bcrypt-hashed passwords,
//! never plain ones) and with which roles. Its shape is a small subset of OpenSearch security's
//! `internal_users.yml`, so it reads familiarly and needs no YAML library:
//!
//! ```yaml
//! admin:
//!   hash: "$2b$12$..."        # from `tessera hash-password`
//!   roles: [admin]
//! reader:
//!   hash: "$2b$12$..."
//!   roles: [readall]
//! ```
//!
//! Checking a password costs a bcrypt verification (tens to hundreds of milliseconds, by design),
//! so a credential that verified once is remembered ([`Users::cached`]); a wrong one is never
//! remembered and always pays the full cost, which also slows guessing. An unknown user name is
//! checked against a real hash too, so the answer time does not tell whether the user exists.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use super::actions::Action;

/// What a user may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Everything.
    Admin,
    /// Read-only: reads of documents, searches, counts, mappings, settings and statistics;
    /// no writes and no index or cluster administration (refresh, flush and force merge too).
    ReadAll,
}

impl Role {
    pub fn parse(name: &str) -> Option<Role> {
        match name {
            "admin" => Some(Role::Admin),
            "readall" => Some(Role::ReadAll),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::ReadAll => "readall",
        }
    }

    /// Whether this role permits `action`.
    pub fn allows(self, action: &Action) -> bool {
        match self {
            Role::Admin => true,
            Role::ReadAll => action.read_only,
        }
    }
}

/// One user of the users file.
#[derive(Debug, Clone)]
pub struct User {
    pub name: String,
    hash: String,
    pub roles: Vec<Role>,
}

impl User {
    /// Whether any of the user's roles permits `action`.
    pub fn allows(&self, action: &Action) -> bool {
        self.roles.iter().any(|role| role.allows(action))
    }

    /// The roles as OpenSearch lists them in a permission error: `[admin, readall]`.
    pub fn role_list(&self) -> String {
        let names: Vec<&str> = self.roles.iter().map(|r| r.name()).collect();
        format!("[{}]", names.join(", "))
    }
}

/// Credentials that verified are remembered, up to this many (then the memory starts over).
const CACHE_LIMIT: usize = 1024;

/// Every user of the users file, and the credentials that verified recently.
#[derive(Debug)]
pub struct Users {
    users: HashMap<String, Arc<User>>,
    /// A real hash checked when the user name is unknown, so that the work (and time) is the
    /// same as for a wrong password.
    decoy_hash: String,
    /// `Authorization` header value → the user it authenticated.
    cache: Mutex<HashMap<String, Arc<User>>>,
}

impl Users {
    /// Reads and checks the users file.
    pub fn load(path: &Path) -> Result<Users, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read users file {}: {e}", path.display()))?;
        Users::parse(&text).map_err(|e| format!("users file {}: {e}", path.display()))
    }

    /// Parses the users file's text (see the module docs for the format).
    pub fn parse(text: &str) -> Result<Users, String> {
        let users = parse_users(text)?;
        let decoy_hash = users
            .iter()
            .map(|u| u.hash.clone())
            .max_by_key(|hash| hash_cost(hash))
            .ok_or("no users are defined")?;
        Ok(Users {
            users: users
                .into_iter()
                .map(|user| (user.name.clone(), Arc::new(user)))
                .collect(),
            decoy_hash,
            cache: Mutex::new(HashMap::new()),
        })
    }

    /// The user these exact credentials (the `Authorization` header value) authenticated
    /// before, if any. Cheap: no hashing.
    pub fn cached(&self, authorization: &str) -> Option<Arc<User>> {
        self.cache.lock().unwrap().get(authorization).cloned()
    }

    /// Checks `name` and `password` (slow: a bcrypt verification, run it off the async
    /// threads). On success the credentials are remembered under `authorization`.
    pub fn verify(&self, authorization: &str, name: &str, password: &str) -> Option<Arc<User>> {
        let user = self.users.get(name);
        let hash = user.map_or(self.decoy_hash.as_str(), |u| u.hash.as_str());
        // bcrypt compares the digests in constant time; an unknown user does the same work
        let matches = bcrypt::verify(password, hash).unwrap_or(false);
        let user = user.filter(|_| matches)?.clone();
        let mut cache = self.cache.lock().unwrap();
        if cache.len() >= CACHE_LIMIT {
            cache.clear();
        }
        cache.insert(authorization.to_string(), user.clone());
        Some(user)
    }
}

/// The bcrypt hash of `password` at `cost` (4 to 31; 12 is bcrypt's default), for the users
/// file.
pub fn hash_password(password: &str, cost: u32) -> Result<String, String> {
    bcrypt::hash(password, cost).map_err(|e| format!("cannot hash the password: {e}"))
}

fn hash_cost(hash: &str) -> u32 {
    hash.parse::<bcrypt::HashParts>()
        .map(|parts| parts.get_cost())
        .unwrap_or(0)
}

fn unquote(value: &str) -> &str {
    let value = value.trim();
    for quote in ['"', '\''] {
        if let Some(inner) = value
            .strip_prefix(quote)
            .and_then(|v| v.strip_suffix(quote))
        {
            return inner;
        }
    }
    value
}

/// `[a, b]`, `a, b` or `a`.
fn parse_list(value: &str) -> Vec<String> {
    let value = value.trim();
    let inner = value
        .strip_prefix('[')
        .and_then(|v| v.strip_suffix(']'))
        .unwrap_or(value);
    inner
        .split(',')
        .map(|item| unquote(item).to_string())
        .filter(|item| !item.is_empty())
        .collect()
}

fn parse_users(text: &str) -> Result<Vec<User>, String> {
    struct Draft {
        name: String,
        line: usize,
        hash: Option<String>,
        roles: Option<Vec<Role>>,
    }
    let mut drafts: Vec<Draft> = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let number = index + 1;
        // bcrypt hashes use `./A-Za-z0-9$` only, so `#` always starts a comment
        let line = raw.split('#').next().unwrap_or("");
        if line.trim().is_empty() {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            return Err(format!("line {number}: expected `key: value`"));
        };
        let indented = line.starts_with([' ', '\t']);
        let key = unquote(key);
        let value = value.trim();
        if !indented {
            if !value.is_empty() {
                return Err(format!(
                    "line {number}: expected a user name followed by `:` alone, with `hash:` and `roles:` on the indented lines below"
                ));
            }
            if key.is_empty() || key.contains(char::is_whitespace) {
                return Err(format!("line {number}: invalid user name [{key}]"));
            }
            if drafts.iter().any(|d| d.name == key) {
                return Err(format!("line {number}: user [{key}] is defined twice"));
            }
            drafts.push(Draft {
                name: key.to_string(),
                line: number,
                hash: None,
                roles: None,
            });
            continue;
        }
        let Some(draft) = drafts.last_mut() else {
            return Err(format!("line {number}: [{key}] is not under a user name"));
        };
        match key {
            "hash" => {
                let hash = unquote(value);
                if hash.parse::<bcrypt::HashParts>().is_err() {
                    return Err(format!(
                        "line {number}: the hash of user [{}] is not a bcrypt hash (create one with `tessera hash-password`)",
                        draft.name
                    ));
                }
                draft.hash = Some(hash.to_string());
            }
            "roles" => {
                let mut roles = Vec::new();
                for name in parse_list(value) {
                    let role = Role::parse(&name).ok_or_else(|| {
                        format!(
                            "line {number}: unknown role [{name}] (known roles: admin, readall)"
                        )
                    })?;
                    roles.push(role);
                }
                draft.roles = Some(roles);
            }
            other => {
                return Err(format!(
                    "line {number}: unknown key [{other}] for user [{}] (expected hash, roles)",
                    draft.name
                ))
            }
        }
    }
    drafts
        .into_iter()
        .map(|draft| {
            let hash = draft
                .hash
                .ok_or_else(|| format!("line {}: user [{}] has no hash", draft.line, draft.name))?;
            let roles = draft.roles.filter(|r| !r.is_empty()).ok_or_else(|| {
                format!("line {}: user [{}] has no roles", draft.line, draft.name)
            })?;
            Ok(User {
                name: draft.name,
                hash,
                roles,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::actions::classify;
    use axum::http::Method;

    fn file(admin_hash: &str, reader_hash: &str) -> String {
        format!(
            "# users\nadmin:\n  hash: \"{admin_hash}\"\n  roles: [admin]\n\nreader:   # read only\n  hash: '{reader_hash}'\n  roles: readall\n"
        )
    }

    #[test]
    fn parses_users_and_verifies_passwords() {
        let admin = hash_password("s3cret", 4).unwrap();
        let reader = hash_password("r3ad", 4).unwrap();
        let users = Users::parse(&file(&admin, &reader)).unwrap();
        assert_eq!(users.users["admin"].roles, vec![Role::Admin]);
        assert_eq!(users.users["reader"].roles, vec![Role::ReadAll]);
        assert_eq!(users.users["reader"].role_list(), "[readall]");

        assert!(users.cached("Basic x").is_none());
        let user = users
            .verify("Basic x", "admin", "s3cret")
            .expect("right password");
        assert_eq!(user.name, "admin");
        assert_eq!(users.cached("Basic x").unwrap().name, "admin");
        assert!(users.verify("Basic y", "admin", "wrong").is_none());
        assert!(users.verify("Basic z", "nobody", "s3cret").is_none());
        assert!(users.cached("Basic y").is_none() && users.cached("Basic z").is_none());
    }

    #[test]
    fn rejects_malformed_files() {
        let hash = hash_password("x", 4).unwrap();
        let cases = [
            ("", "no users"),
            ("admin:\n  roles: [admin]\n", "has no hash"),
            (&format!("admin:\n  hash: {hash}\n") as &str, "has no roles"),
            (
                &format!("admin:\n  hash: {hash}\n  roles: [root]\n"),
                "unknown role [root]",
            ),
            (
                "admin:\n  hash: plaintext\n  roles: [admin]\n",
                "not a bcrypt hash",
            ),
            ("  hash: x\n", "not under a user name"),
            ("admin: secret\n", "followed by `:` alone"),
            (
                &format!("a:\n  hash: {hash}\n  roles: [admin]\na:\n"),
                "defined twice",
            ),
            (
                &format!("a:\n  hash: {hash}\n  password: x\n"),
                "unknown key [password]",
            ),
        ];
        for (text, expected) in cases {
            let error = Users::parse(text).unwrap_err();
            assert!(error.contains(expected), "{text:?}: {error}");
        }
    }

    #[test]
    fn roles_permit_actions() {
        let search = classify(&Method::POST, "/logs/_search");
        let bulk = classify(&Method::POST, "/_bulk");
        let refresh = classify(&Method::GET, "/_refresh");
        assert!(Role::Admin.allows(&search) && Role::Admin.allows(&bulk));
        assert!(Role::ReadAll.allows(&search));
        assert!(!Role::ReadAll.allows(&bulk) && !Role::ReadAll.allows(&refresh));
        let both = User {
            name: "u".into(),
            hash: String::new(),
            roles: vec![Role::ReadAll, Role::Admin],
        };
        assert!(both.allows(&bulk));
        assert_eq!(both.role_list(), "[readall, admin]");
    }
}
