//! `preference`: which copies of a shard a search asks, in which order, as OpenSearch reads
//! the parameter. Without one, searches turn over the started copies in round robin; a custom
//! string always orders them the same way (a user's searches stay on the same copies, so
//! paging and scoring stay consistent); `_primary`, `_replica` (and their `_first` forms),
//! `_local`, `_only_local`, `_only_nodes:` and `_prefer_nodes:` pick by role or node, and
//! `_shards:0,2` (alone or before `|` and another preference) restricts the shards searched.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use tessera_common::{Error, Result};

/// How the copies of each shard are chosen and ordered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Order {
    /// Round robin over the started copies.
    Turn,
    /// A stable order per value.
    Custom(String),
    Primary,
    PrimaryFirst,
    Replica,
    ReplicaFirst,
    Local,
    OnlyLocal,
    /// Only copies on nodes matching these specs (ids or names, `*` wildcards).
    OnlyNodes(Vec<String>),
    PreferNodes(Vec<String>),
}

/// A parsed `preference`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Preference {
    /// `_shards:`: only these shard ids.
    pub shards: Option<Vec<u32>>,
    pub order: Order,
}

/// One started copy of a shard, as the preference sees it.
#[derive(Clone, Debug)]
pub struct Copy<'a> {
    pub node_id: &'a str,
    pub node_name: &'a str,
    pub primary: bool,
}

impl Preference {
    /// No preference: the copies are the coordinator's to choose (round robin, or adaptive
    /// replica selection).
    pub fn is_default(&self) -> bool {
        matches!(self.order, Order::Turn)
    }

    /// No preference: every shard, copies in round robin.
    pub fn none() -> Preference {
        Preference {
            shards: None,
            order: Order::Turn,
        }
    }

    pub fn parse(text: Option<&str>) -> Result<Preference> {
        let Some(text) = text.filter(|t| !t.is_empty()) else {
            return Ok(Preference::none());
        };
        let (shards, rest) = match text.strip_prefix("_shards:") {
            Some(spec) => {
                let (ids, rest) = match spec.split_once('|') {
                    Some((ids, rest)) => (ids, Some(rest)),
                    None => (spec, None),
                };
                let ids = ids
                    .split(',')
                    .map(|id| {
                        id.trim().parse::<u32>().map_err(|_| {
                            Error::illegal_argument(format!(
                                "No shard id in preference [{text}]: [{id}] is not a number"
                            ))
                        })
                    })
                    .collect::<Result<Vec<u32>>>()?;
                (Some(ids), rest)
            }
            None => (None, Some(text)),
        };
        let order = match rest.filter(|r| !r.is_empty()) {
            None => Order::Turn,
            Some(rest) => Self::parse_order(rest)?,
        };
        Ok(Preference { shards, order })
    }

    fn parse_order(text: &str) -> Result<Order> {
        let nodes = |spec: &str| -> Vec<String> {
            spec.split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect()
        };
        if let Some(spec) = text.strip_prefix("_only_nodes:") {
            return Ok(Order::OnlyNodes(nodes(spec)));
        }
        if let Some(spec) = text.strip_prefix("_prefer_nodes:") {
            return Ok(Order::PreferNodes(nodes(spec)));
        }
        Ok(match text {
            "_primary" => Order::Primary,
            "_primary_first" => Order::PrimaryFirst,
            "_replica" => Order::Replica,
            "_replica_first" => Order::ReplicaFirst,
            "_local" => Order::Local,
            "_only_local" => Order::OnlyLocal,
            other if other.starts_with('_') => {
                return Err(Error::illegal_argument(format!(
                    "no Preference for [{other}]"
                )))
            }
            custom => Order::Custom(custom.to_string()),
        })
    }

    /// Whether shard `id` is searched.
    pub fn selects(&self, id: u32) -> bool {
        self.shards.as_ref().is_none_or(|ids| ids.contains(&id))
    }

    /// The positions in `copies` to ask for `shard`, in order (none: no copy may serve it);
    /// `turn` is the round robin's position, `local` this node's id.
    pub fn order(&self, shard: u32, copies: &[Copy<'_>], local: &str, turn: usize) -> Vec<usize> {
        let all: Vec<usize> = (0..copies.len()).collect();
        let rotated = |by: usize| -> Vec<usize> {
            if all.is_empty() {
                return Vec::new();
            }
            let first = by % all.len();
            all[first..].iter().chain(&all[..first]).copied().collect()
        };
        let first_where = |matches: &dyn Fn(&Copy<'_>) -> bool, base: Vec<usize>| -> Vec<usize> {
            let (mut yes, no): (Vec<usize>, Vec<usize>) =
                base.into_iter().partition(|&i| matches(&copies[i]));
            yes.extend(no);
            yes
        };
        let only = |matches: &dyn Fn(&Copy<'_>) -> bool, base: Vec<usize>| -> Vec<usize> {
            base.into_iter().filter(|&i| matches(&copies[i])).collect()
        };
        let on_nodes = |specs: &[String]| {
            let specs = specs.to_vec();
            move |copy: &Copy<'_>| {
                specs
                    .iter()
                    .any(|spec| wildcard(spec, copy.node_id) || wildcard(spec, copy.node_name))
            }
        };
        match &self.order {
            Order::Turn => rotated(turn),
            Order::Custom(value) => {
                let mut hasher = DefaultHasher::new();
                (value, shard).hash(&mut hasher);
                rotated(hasher.finish() as usize)
            }
            Order::Primary => only(&|c| c.primary, all),
            Order::PrimaryFirst => first_where(&|c| c.primary, rotated(turn)),
            Order::Replica => only(&|c| !c.primary, rotated(turn)),
            Order::ReplicaFirst => first_where(&|c| !c.primary, rotated(turn)),
            Order::Local => first_where(&|c| c.node_id == local, rotated(turn)),
            Order::OnlyLocal => only(&|c| c.node_id == local, all),
            Order::OnlyNodes(specs) => only(&on_nodes(specs), rotated(turn)),
            Order::PreferNodes(specs) => first_where(&on_nodes(specs), rotated(turn)),
        }
    }
}

/// `pattern` with `*` wildcards matches `text`.
fn wildcard(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let mut rest = text;
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            let Some(after) = rest.strip_prefix(part) else {
                return false;
            };
            rest = after;
        } else if i == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            match rest.find(part) {
                Some(at) => rest = &rest[at + part.len()..],
                None => return false,
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copies() -> Vec<Copy<'static>> {
        vec![
            Copy {
                node_id: "id-a",
                node_name: "node-a",
                primary: true,
            },
            Copy {
                node_id: "id-b",
                node_name: "node-b",
                primary: false,
            },
            Copy {
                node_id: "id-c",
                node_name: "node-c",
                primary: false,
            },
        ]
    }

    fn order(preference: &str, turn: usize) -> Vec<usize> {
        Preference::parse(Some(preference))
            .unwrap()
            .order(0, &copies(), "id-b", turn)
    }

    #[test]
    fn without_a_preference_searches_turn_over_the_copies() {
        let none = Preference::parse(None).unwrap();
        assert_eq!(none.order(0, &copies(), "id-b", 0), [0, 1, 2]);
        assert_eq!(none.order(0, &copies(), "id-b", 4), [1, 2, 0]);
        assert!(none.selects(7));
    }

    #[test]
    fn roles_and_nodes_choose_the_copies() {
        assert_eq!(order("_primary", 1), [0]);
        assert_eq!(order("_primary_first", 1), [0, 1, 2]);
        assert_eq!(order("_replica", 0), [1, 2]);
        assert_eq!(order("_replica_first", 2), [2, 1, 0]);
        assert_eq!(order("_local", 0), [1, 0, 2]);
        assert_eq!(order("_only_local", 2), [1]);
        assert_eq!(order("_only_nodes:node-c,id-a", 0), [0, 2]);
        assert_eq!(order("_only_nodes:node-*", 1), [1, 2, 0]);
        assert_eq!(order("_prefer_nodes:id-c", 0), [2, 0, 1]);
        assert!(order("_only_nodes:elsewhere", 0).is_empty());
    }

    #[test]
    fn a_custom_string_always_orders_alike() {
        let first = order("session-42", 0);
        for turn in 1..5 {
            assert_eq!(order("session-42", turn), first);
        }
        let spread: std::collections::BTreeSet<usize> =
            (0..40).map(|i| order(&format!("user-{i}"), 0)[0]).collect();
        assert_eq!(spread.len(), 3, "sessions spread over the copies");
    }

    #[test]
    fn shards_restrict_and_combine() {
        let p = Preference::parse(Some("_shards:0,2|_local")).unwrap();
        assert_eq!(p.shards, Some(vec![0, 2]));
        assert_eq!(p.order, Order::Local);
        assert!(p.selects(2) && !p.selects(1));
        let p = Preference::parse(Some("_shards:1")).unwrap();
        assert_eq!((p.shards, p.order), (Some(vec![1]), Order::Turn));
        let e = Preference::parse(Some("_shards:x")).unwrap_err();
        assert_eq!(e.status(), 400);
        let e = Preference::parse(Some("_bogus")).unwrap_err();
        assert_eq!(e.reason(), "no Preference for [_bogus]");
    }
}
