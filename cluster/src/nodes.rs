//! The cluster's members: from corosync, or from a list the user gives.
//!
//! `corosync-cmapctl nodelist` gives every configured node with its name (the one users
//! know, and ssh's destination), its node id and which entry is this node
//! (`nodelist.local_node_pos`); where it is not installed or gives no names,
//! `corosync-quorumtool -l` gives the members it sees, this node marked `(local)`.

use std::fmt;

/// One member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// The name shown and used for its directory: the destination without a `user@`.
    pub name: String,
    /// ssh's destination (`host` or `user@host`).
    pub host: String,
    /// Its corosync node id, when corosync said.
    pub nodeid: Option<u64>,
    /// True for the node glk runs on: its agent runs without ssh.
    pub local: bool,
}

impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

impl Node {
    /// A member reached as `host` (checked by [`check_host`]); `local` when `host` names
    /// this machine (`this_host`, its host name, short or full).
    pub fn new(host: &str, this_host: &str) -> Result<Node, String> {
        check_host(host)?;
        let name = host.rsplit('@').next().unwrap_or(host).to_string();
        let short = |s: &str| s.split('.').next().unwrap_or(s).to_string();
        let local = name == this_host || short(&name) == short(this_host) && !is_address(&name);
        Ok(Node {
            name,
            host: host.to_string(),
            nodeid: None,
            local,
        })
    }

    /// The directory its files go in ([`dir_name`] of its name).
    pub fn dir(&self) -> String {
        dir_name(&self.name)
    }
}

/// A node's name as the directory its files go in: letters, digits and `._-` (what the
/// agent protocol's paths allow), any other character as `_`, and `_` for a leading `.`.
pub fn dir_name(name: &str) -> String {
    name.chars()
        .enumerate()
        .map(|(i, c)| match c {
            '.' if i == 0 => '_',
            c if c.is_ascii_alphanumeric() || "._-".contains(c) => c,
            _ => '_',
        })
        .collect()
}

/// The members, when no two share a directory ([`Node::dir`]: one node's files would be
/// written over another's).
fn distinct(nodes: Vec<Node>) -> Result<Vec<Node>, String> {
    for (i, n) in nodes.iter().enumerate() {
        if let Some(o) = nodes[..i].iter().find(|o| o.dir() == n.dir()) {
            return Err(if o.name == n.name {
                format!("node {} is listed twice", n.name)
            } else {
                format!(
                    "nodes {} and {} would share the directory {}: name one of them otherwise",
                    o.name,
                    n.name,
                    n.dir()
                )
            });
        }
    }
    Ok(nodes)
}

/// True for an IPv4 or IPv6 address (whose first dotted part is no host name).
fn is_address(s: &str) -> bool {
    s.parse::<std::net::IpAddr>().is_ok()
}

/// Checks that `host` is a destination and nothing else: letters, digits and `.-_:@%`
/// (a `user@`, an IPv6 address), never starting with `-`, which ssh would take for an
/// option.
pub fn check_host(host: &str) -> Result<(), String> {
    let ok_byte = |b: u8| b.is_ascii_alphanumeric() || b".-_:@%".contains(&b);
    if host.is_empty() || host.len() > 255 {
        return Err(format!("{host:?}: a node is a host name of 1 to 255 bytes"));
    }
    if host.starts_with('-') {
        return Err(format!("{host:?}: a node name cannot start with '-'"));
    }
    if let Some(b) = host.bytes().find(|b| !ok_byte(*b)) {
        return Err(format!(
            "{host:?}: a node name is letters, digits and . - _ : @ %, not {:?}",
            char::from(b)
        ));
    }
    Ok(())
}

/// The members of `--nodes a,b,c` (duplicates are an error: each node is one directory).
pub fn parse_list(list: &[String], this_host: &str) -> Result<Vec<Node>, String> {
    let nodes = list
        .iter()
        .map(|h| h.trim())
        .filter(|h| !h.is_empty())
        .map(|host| Node::new(host, this_host))
        .collect::<Result<Vec<Node>, String>>()?;
    if nodes.is_empty() {
        return Err("--nodes names no node".into());
    }
    distinct(nodes)
}

/// The members from corosync: `cmapctl` is the output of `corosync-cmapctl nodelist`,
/// `quorumtool` that of `corosync-quorumtool -l` (each None when the tool did not
/// answer). Nodes without a usable name are named by their first ring address.
pub fn from_corosync(
    cmapctl: Option<&str>,
    quorumtool: Option<&str>,
    this_host: &str,
) -> Result<Vec<Node>, String> {
    if let Some(nodes) = cmapctl.and_then(|t| from_cmapctl(t, this_host)) {
        return distinct(nodes);
    }
    if let Some(nodes) = quorumtool.and_then(|t| from_quorumtool(t, this_host)) {
        return distinct(nodes);
    }
    Err(
        "corosync names no members (corosync-cmapctl nodelist and corosync-quorumtool -l \
         gave none): is corosync running here? Else name the nodes with --nodes a,b,c"
            .into(),
    )
}

/// `nodelist.node.I.KEY (TYPE) = VALUE` lines into members, in index order.
fn from_cmapctl(text: &str, this_host: &str) -> Option<Vec<Node>> {
    #[derive(Default)]
    struct Entry {
        name: Option<String>,
        addr: Option<String>,
        nodeid: Option<u64>,
    }
    let mut entries: std::collections::BTreeMap<u32, Entry> = Default::default();
    let mut local_pos = None;
    for line in text.lines() {
        let Some((key, value)) = line.split_once(" = ") else {
            continue;
        };
        let key = key.split(" (").next().unwrap_or(key).trim();
        let value = value.trim();
        if key == "nodelist.local_node_pos" {
            local_pos = value.parse::<u32>().ok();
            continue;
        }
        let Some(rest) = key.strip_prefix("nodelist.node.") else {
            continue;
        };
        let Some((index, field)) = rest.split_once('.') else {
            continue;
        };
        let Ok(index) = index.parse::<u32>() else {
            continue;
        };
        let e = entries.entry(index).or_default();
        match field {
            "name" => e.name = Some(value.to_string()),
            "ring0_addr" => e.addr = Some(value.to_string()),
            "nodeid" => e.nodeid = value.parse().ok(),
            _ => {}
        }
    }
    let nodes: Vec<Node> = entries
        .into_iter()
        .filter_map(|(i, e)| {
            let host = e
                .name
                .filter(|n| check_host(n).is_ok())
                .or(e.addr.filter(|a| check_host(a).is_ok()))?;
            let mut n = Node::new(&host, this_host).ok()?;
            n.nodeid = e.nodeid;
            if local_pos.is_some() {
                n.local = local_pos == Some(i);
            }
            Some(n)
        })
        .collect();
    (!nodes.is_empty()).then_some(nodes)
}

/// `corosync-quorumtool -l`'s table (`Nodeid Votes Name`, this node's name followed by
/// `(local)`) into members.
fn from_quorumtool(text: &str, this_host: &str) -> Option<Vec<Node>> {
    let mut in_table = false;
    let mut nodes = Vec::new();
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.first() == Some(&"Nodeid") {
            in_table = true;
            continue;
        }
        if !in_table || words.len() < 3 {
            continue;
        }
        let (Ok(id), Ok(_votes)) = (words[0].parse::<u64>(), words[1].parse::<u32>()) else {
            continue;
        };
        let Ok(mut n) = Node::new(words[2], this_host) else {
            continue;
        };
        n.nodeid = Some(id);
        n.local = words.get(3) == Some(&"(local)");
        nodes.push(n);
    }
    (!nodes.is_empty()).then_some(nodes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_lookalikes_and_shell_words_are_no_nodes() {
        for bad in [
            "-oProxyCommand=sh",
            "a b",
            "n1;reboot",
            "$(id)",
            "",
            "n1\nn2",
            "n1/x",
        ] {
            assert!(check_host(bad).is_err(), "{bad:?}");
        }
        for good in ["n1", "root@n2.example.com", "10.0.0.1", "fe80::1%eth0"] {
            assert!(check_host(good).is_ok(), "{good:?}");
        }
    }

    #[test]
    fn a_list_names_this_node_and_refuses_repeats() {
        let nodes = parse_list(&["n1".into(), "root@n2".into()], "n1").unwrap();
        assert_eq!(nodes[0].name, "n1");
        assert!(nodes[0].local);
        assert_eq!(
            (nodes[1].name.as_str(), nodes[1].host.as_str()),
            ("n2", "root@n2")
        );
        assert!(!nodes[1].local);
        assert!(parse_list(&["n1".into(), "n1".into()], "x").is_err());
        // Two names, one directory: refused, not written over each other.
        let e = parse_list(&["fe80::1".into(), "fe80__1".into()], "x").unwrap_err();
        assert!(e.contains("share the directory fe80__1"), "{e}");
        assert!(!parse_list(&["127.0.0.1".into()], "127").unwrap()[0].local);
    }

    #[test]
    fn a_directory_name_is_a_path_the_protocol_writes() {
        for (name, dir) in [
            ("n1.example.com", "n1.example.com"),
            ("fe80::1%eth0", "fe80__1_eth0"),
            (".hidden", "_hidden"),
        ] {
            assert_eq!(dir_name(name), dir);
            assert!(crate::protocol::safe_path(&format!("lab_gfs/{dir}/glocks.0")).is_ok());
        }
    }

    #[test]
    fn cmapctl_nodelist_gives_names_ids_and_this_node() {
        // As corosync-cmapctl 3.1 prints it (corosync.conf nodelist with names).
        let text = "nodelist.local_node_pos (u32) = 1\n\
            nodelist.node.0.name (str) = n1\n\
            nodelist.node.0.nodeid (u32) = 1\n\
            nodelist.node.0.ring0_addr (str) = 192.168.100.11\n\
            nodelist.node.1.name (str) = n2\n\
            nodelist.node.1.nodeid (u32) = 2\n\
            nodelist.node.1.ring0_addr (str) = 192.168.100.12\n\
            nodelist.node.2.nodeid (u32) = 3\n\
            nodelist.node.2.ring0_addr (str) = 192.168.100.13\n";
        let nodes = from_corosync(Some(text), None, "whatever").unwrap();
        let seen: Vec<_> = nodes
            .iter()
            .map(|n| (n.name.as_str(), n.nodeid, n.local))
            .collect();
        assert_eq!(
            seen,
            [
                ("n1", Some(1), false),
                ("n2", Some(2), true),
                ("192.168.100.13", Some(3), false)
            ]
        );
    }

    #[test]
    fn quorumtool_members_when_cmapctl_gives_none() {
        let text = "\nMembership information\n----------------------\n    \
            Nodeid      Votes Name\n         1          1 n1\n         2          1 n2 (local)\n";
        let nodes = from_corosync(Some(""), Some(text), "x").unwrap();
        assert_eq!(nodes.len(), 2);
        assert!(nodes[1].local && !nodes[0].local);
        assert_eq!(nodes[1].nodeid, Some(2));
        assert!(from_corosync(None, None, "x").is_err());
    }
}
