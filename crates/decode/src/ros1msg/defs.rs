//! The sections of one ROS1 full definition by type name, and how a type
//! name written inside a section resolves to one of them. Shared by the
//! decoder's compiler (`plan.rs`) and the md5sum (`md5sum.rs`).

use std::collections::HashMap;

use super::parse::{self, Section};
use crate::DecodeError;

/// A full definition's sections, the main type under its own name.
pub(super) struct Definitions<'a> {
    /// Section text by normalized type name.
    sections: HashMap<String, Section<'a>>,
    /// Full names of the sections by short name (`Point` -> `geometry_msgs/Point`).
    by_short_name: HashMap<String, Vec<String>>,
}

/// The package of `pkg/Type` (`""` without one).
pub(super) fn package_of(type_name: &str) -> &str {
    type_name.rsplit_once('/').map(|(p, _)| p).unwrap_or("")
}

impl<'a> Definitions<'a> {
    /// The sections of `definition` (genmsg full text) whose main type is
    /// `type_name`, and that main type's normalized name.
    pub(super) fn new(type_name: &str, definition: &'a str) -> (String, Self) {
        let root_name = parse::normalize_type_name(type_name);
        let mut sections: HashMap<String, Section<'a>> = HashMap::new();
        let mut all = parse::split_sections(definition).into_iter();
        if let Some(main) = all.next() {
            sections.insert(root_name.clone(), main);
        }
        for s in all {
            if let Some(name) = s.name.clone() {
                // A duplicated section: the first one wins.
                sections.entry(name).or_insert(s);
            }
        }
        let mut by_short_name: HashMap<String, Vec<String>> = HashMap::new();
        for name in sections.keys() {
            if let Some((_, short)) = name.rsplit_once('/') {
                by_short_name
                    .entry(short.to_string())
                    .or_default()
                    .push(name.clone());
            }
        }
        for names in by_short_name.values_mut() {
            names.sort();
        }
        (
            root_name,
            Self {
                sections,
                by_short_name,
            },
        )
    }

    /// The section of type `name` (a full, normalized name).
    pub(super) fn section(&self, name: &str) -> Option<&Section<'a>> {
        self.sections.get(name)
    }

    /// Does the definition hold a section for `name`?
    pub(super) fn has(&self, name: &str) -> bool {
        self.sections.contains_key(name)
    }

    /// The full name `base` means inside a section of package `pkg`:
    /// `Header` is `std_msgs/Header`; a bare name is looked up in `pkg`, then
    /// in `std_msgs`, then as the only dependency section of that short name.
    pub(super) fn resolve(&self, base: &str, pkg: &str) -> Result<String, DecodeError> {
        let base = parse::normalize_type_name(base);
        if base == "Header" {
            return Ok("std_msgs/Header".to_string());
        }
        if base.contains('/') {
            return Ok(base);
        }
        let local = if pkg.is_empty() {
            base.clone()
        } else {
            format!("{pkg}/{base}")
        };
        if self.sections.contains_key(&local) {
            return Ok(local);
        }
        let std = format!("std_msgs/{base}");
        if self.sections.contains_key(&std) {
            return Ok(std);
        }
        match self.by_short_name.get(base.as_str()).map(Vec::as_slice) {
            None | Some([]) => Ok(local),
            Some([one]) => Ok(one.clone()),
            Some(many) => Err(DecodeError::new(format!(
                "type {base:?} is ambiguous: {}",
                many.join(", ")
            ))),
        }
    }
}
