//! Validation: the parsed items checked as a whole — kinds known, no device twice, the leader a
//! member and given once, no host staging where it is forbidden — every error recorded on the
//! user's token, and a best-effort group kept so a bad invocation still expands to a stub of the
//! right type.

use proc_macro2::{Ident, Span};
use quote::ToTokens;

use crate::errors::Ctxt;
use crate::parse::{FLAG_OPTIONS, Item, MemberSpec};
use crate::suggest::closest;

/// A device kind `device_group!` knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `Cpu`.
    Cpu,
    /// `Cuda`.
    Cuda,
    /// `Vulkan`.
    Vulkan,
}

impl Kind {
    /// The kinds' names, as written in an invocation.
    pub const NAMES: [&'static str; 3] = ["Cpu", "Cuda", "Vulkan"];

    fn from_name(name: &str) -> Option<Kind> {
        match name {
            "Cpu" => Some(Kind::Cpu),
            "Cuda" => Some(Kind::Cuda),
            "Vulkan" => Some(Kind::Vulkan),
            _ => None,
        }
    }

    /// The kind's name, which is also its type's name in `collectives::typed`.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Cpu => "Cpu",
            Kind::Cuda => "Cuda",
            Kind::Vulkan => "Vulkan",
        }
    }
}

/// A member after validation.
pub struct Member {
    /// The kind; for an unknown name, the suggested kind (for the stub) or `None`.
    pub kind: Option<Kind>,
    /// Whether `kind` is what the user wrote (not a guess).
    pub exact: bool,
    /// The ordinal (0 where it was invalid).
    pub ordinal: u32,
    /// Whether the ordinal was valid.
    pub ordinal_ok: bool,
    /// The member as written.
    pub spec: MemberSpec,
}

impl Member {
    fn resolve(spec: MemberSpec, cx: &Ctxt) -> Member {
        let (kind, exact) = resolve_kind(&spec.kind, cx);
        Member { kind, exact, ordinal: spec.ordinal.unwrap_or(0), ordinal_ok: spec.ordinal.is_some(), spec }
    }

    /// The device this member names, when it is fully known.
    fn device(&self) -> Option<(Kind, u32)> {
        match self.kind {
            Some(k) if self.exact && self.ordinal_ok => Some((k, self.ordinal)),
            _ => None,
        }
    }

    /// `Cuda(1)`.
    fn display(&self) -> String {
        format!("{}({})", self.spec.kind, self.ordinal)
    }
}

/// The group an invocation describes (best effort when there were errors).
pub struct Group {
    /// The members, in order.
    pub members: Vec<Member>,
    /// The leader's position among the members, when it was given and found.
    pub leader: Option<usize>,
    /// The leader's kind, when it was given and known (or guessed).
    pub leader_kind: Option<Kind>,
    /// The brand type, if given.
    pub brand: Option<syn::Type>,
    /// The `no_staging` token, if given.
    pub no_staging: Option<Ident>,
    /// The path of the `collectives` crate, if given (`crate = path`).
    pub krate: Option<syn::Path>,
}

/// The most members a typed group takes: `collectives::typed::Members` is implemented for tuples
/// of 1 to 12 kinds.
pub const MAX_MEMBERS: usize = 12;

/// Checks `items` as a group, recording every error into `cx`.
pub fn validate(items: Vec<Item>, cx: &Ctxt) -> Group {
    let mut group = Group {
        members: Vec::new(),
        leader: None,
        leader_kind: None,
        brand: None,
        no_staging: None,
        krate: None,
    };
    let mut leaders = Vec::new();
    for item in items {
        match item {
            Item::Member(spec) => group.members.push(Member::resolve(spec, cx)),
            Item::Leader { key, member } => leaders.push((key, member)),
            Item::Brand { key, ty } => once(&mut group.brand, ty, &key, "the brand", cx),
            Item::NoStaging(key) => once(&mut group.no_staging, key.clone(), &key, "`no_staging`", cx),
            Item::Crate { key, path } => once(&mut group.krate, path, key, "`crate`", cx),
        }
    }
    if group.members.is_empty() {
        let msg = "device_group! needs at least one member, as in `device_group!(Cuda, Cpu)`";
        cx.at(Span::call_site(), msg);
    }
    check_size(&group.members, cx);
    check_duplicates(&group.members, cx);
    (group.leader, group.leader_kind) = check_leaders(&group.members, leaders, cx);
    if group.no_staging.is_some() {
        check_no_staging(&group.members, cx);
    }
    group
}

/// Reports the first member past [`MAX_MEMBERS`], with the runtime group as the way out.
fn check_size(members: &[Member], cx: &Ctxt) {
    if let Some(m) = members.get(MAX_MEMBERS) {
        let msg = format!(
            "a typed group has at most {MAX_MEMBERS} members and `{}` is member {}: for more devices \
             use the runtime group, `collectives::DeviceGroup::new(vec![...])`",
            m.display(),
            MAX_MEMBERS + 1
        );
        cx.spanned(&m.spec, msg);
    }
}

/// Stores `value` in `slot`, or reports that `what` was given twice (at `key`).
fn once<T>(slot: &mut Option<T>, value: T, key: impl ToTokens, what: &str, cx: &Ctxt) {
    if slot.is_some() {
        cx.spanned(key, format!("{what} is given twice: give it once"));
    } else {
        *slot = Some(value);
    }
}

/// The kind `name` names (or a guess for the stub), and whether it is exact.
fn resolve_kind(name: &Ident, cx: &Ctxt) -> (Option<Kind>, bool) {
    let written = name.to_string();
    if let Some(kind) = Kind::from_name(&written) {
        return (Some(kind), true);
    }
    let near = closest(&written, &Kind::NAMES).and_then(Kind::from_name);
    let msg = if written.eq_ignore_ascii_case("gpu") {
        format!("`{written}` is not a device kind: name the GPU's API, `Cuda` or `Vulkan`")
    } else if let Some(kind) = near {
        format!("unknown device kind `{written}`; did you mean `{}`?", kind.name())
    } else if let Some(flag) = closest(&written, FLAG_OPTIONS) {
        format!("unknown device kind `{written}`; did you mean the option `{flag}`?")
    } else {
        format!("unknown device kind `{written}`: expected `Cpu`, `Cuda` or `Vulkan`")
    };
    cx.spanned(name, msg);
    (near, false)
}

/// Reports every member naming a device an earlier member names.
fn check_duplicates(members: &[Member], cx: &Ctxt) {
    for (i, m) in members.iter().enumerate() {
        let Some(device) = m.device() else { continue };
        let Some(first) = members[..i].iter().position(|e| e.device() == Some(device)) else {
            continue;
        };
        let bare = m.spec.parens.is_none() || members[first].spec.parens.is_none();
        let hint = if bare {
            format!(
                " (a bare `{0}` is `{0}(0)`, the first device); for several {0} devices give ordinals: `{0}(0), {0}(1)`",
                m.spec.kind
            )
        } else {
            String::new()
        };
        let msg = format!(
            "`{}` is already member {first} of this group: each device may appear once{hint}",
            m.display()
        );
        cx.spanned(&m.spec, msg);
    }
}

/// Checks the `leader = ...` options: at most one, naming a member. The leader's position and
/// kind.
fn check_leaders(
    members: &[Member],
    leaders: Vec<(Ident, MemberSpec)>,
    cx: &Ctxt,
) -> (Option<usize>, Option<Kind>) {
    let mut leaders = leaders.into_iter();
    let Some((_, spec)) = leaders.next() else {
        return (None, None);
    };
    for (key, _) in leaders {
        cx.spanned(&key, "the leader is given twice: a group has one leader");
    }
    let leader = Member::resolve(spec, cx);
    let Some((kind, ordinal)) = leader.device() else {
        return (None, leader.kind);
    };
    let found = members.iter().position(|m| m.device() == Some((kind, ordinal)));
    // A member whose kind or ordinal did not parse might be the leader: say nothing more then.
    let maybe = |m: &Member| m.kind.is_none() || (m.kind == Some(kind) && !m.ordinal_ok);
    if found.is_none() && !members.iter().any(maybe) {
        let list: Vec<String> = members.iter().map(|m| format!("`{}`", m.display())).collect();
        let msg = format!(
            "leader `{}` is not a member of this group; its members are {}",
            leader.display(),
            list.join(", ")
        );
        cx.spanned(&leader.spec, msg);
    }
    (found, Some(kind))
}

/// Reports the first member that gives a `no_staging` group a staged hop: a GPU of the other
/// vendor, or a second Vulkan device (two Vulkan devices cannot read each other's memory).
fn check_no_staging(members: &[Member], cx: &Ctxt) {
    let mut seen: Option<&Member> = None;
    for m in members.iter().filter(|m| m.exact) {
        let why = match (seen, m.kind) {
            (None, Some(Kind::Cuda | Kind::Vulkan)) => {
                seen = Some(m);
                continue;
            }
            (Some(first), Some(k @ (Kind::Cuda | Kind::Vulkan))) if first.kind != Some(k) => {
                (first, "a hop between Cuda and Vulkan devices is staged through the host")
            }
            (Some(first), Some(Kind::Vulkan)) => (
                first,
                "two Vulkan devices cannot read each other's memory, so a hop between them is staged through the host",
            ),
            _ => continue,
        };
        let msg = format!(
            "`{}` cannot join `{}` in a `no_staging` group: {}; keep the group to Cuda devices or one Vulkan device, or drop `no_staging`",
            m.display(),
            why.0.display(),
            why.1
        );
        cx.spanned(&m.spec, msg);
        return;
    }
}
