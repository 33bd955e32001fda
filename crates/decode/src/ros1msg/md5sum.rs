//! The `md5sum` ROS1 gives a message type: the MD5 of its genmsg "md5 text",
//! which is the type's constants (`TYPE NAME=VALUE`), then its fields, one
//! per line, with every nested message type written as its own md5sum in
//! place of its name (`Header header` becomes `<md5 of std_msgs/Header> header`,
//! an array of messages loses its `[]`). A bag connection needs it; MCAP
//! files state it only sometimes.

use std::collections::HashMap;

use md5::{Digest, Md5};

use super::MAX_DEPTH;
use super::defs::{self, Definitions};
use super::parse::{self, ArrayDecl};
use super::plan::Prim;
use crate::DecodeError;

/// The md5sum (32 lowercase hex digits) of `type_name` (`sensor_msgs/Imu`)
/// from its genmsg full definition text, as `rosbag` and `roscpp` compute it.
/// An empty definition is a message with no fields (`std_msgs/Empty`'s
/// `d41d8cd98f00b204e9800998ecf8427e`).
pub fn md5sum(type_name: &str, definition: &str) -> Result<String, DecodeError> {
    let (root, defs) = Definitions::new(type_name, definition);
    let mut sums = Sums {
        defs,
        done: HashMap::new(),
        stack: Vec::new(),
    };
    sums.of(&root).map_err(|e| e.context(type_name))
}

/// One computation: the definition and the sums found so far.
struct Sums<'a> {
    defs: Definitions<'a>,
    done: HashMap<String, String>,
    stack: Vec<String>,
}

impl Sums<'_> {
    fn of(&mut self, name: &str) -> Result<String, DecodeError> {
        if let Some(sum) = self.done.get(name) {
            return Ok(sum.clone());
        }
        if self.stack.iter().any(|s| s == name) || self.stack.len() >= MAX_DEPTH {
            let mut chain = self.stack.clone();
            chain.push(name.to_string());
            return Err(DecodeError::new(format!(
                "message types recurse or nest deeper than {MAX_DEPTH} levels: {}",
                chain.join(" -> ")
            )));
        }
        let Some(section) = self.defs.section(name) else {
            return Err(DecodeError::new(format!(
                "type {name} is not defined in the message definition"
            )));
        };
        let decls = parse::parse_section(section, |t| Prim::from_name(t).is_some())
            .map_err(|e| e.context(name))?;
        let mut lines: Vec<String> = decls
            .constants
            .iter()
            .map(|c| format!("{} {}={}", c.ty, c.name, c.value))
            .collect();
        let pkg = defs::package_of(name).to_string();
        self.stack.push(name.to_string());
        for f in &decls.fields {
            let line = if Prim::from_name(f.base).is_some() {
                match f.array {
                    ArrayDecl::None => format!("{} {}", f.base, f.name),
                    ArrayDecl::Var => format!("{}[] {}", f.base, f.name),
                    ArrayDecl::Fixed(n) => format!("{}[{n}] {}", f.base, f.name),
                }
            } else {
                let nested = self
                    .defs
                    .resolve(f.base, &pkg)
                    .and_then(|full| self.of(&full));
                match nested {
                    Ok(sum) => format!("{sum} {}", f.name),
                    Err(e) => {
                        self.stack.pop();
                        return Err(e.context(format!("{name}.{}", f.name)));
                    }
                }
            };
            lines.push(line);
        }
        self.stack.pop();
        let sum = hex(&Md5::digest(lines.join("\n").as_bytes()));
        self.done.insert(name.to_string(), sum.clone());
        Ok(sum)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn md5sums_of_well_known_types() {
        // The md5sums ROS Noetic's message packages state.
        assert_eq!(
            md5sum("std_msgs/String", "string data\n").unwrap(),
            "992ce8a1687cec8c8bd883ec73ca41d1"
        );
        assert_eq!(
            md5sum("std_msgs/Empty", "").unwrap(),
            "d41d8cd98f00b204e9800998ecf8427e"
        );
        let header = "uint32 seq\ntime stamp\nstring frame_id\n";
        assert_eq!(
            md5sum("std_msgs/Header", header).unwrap(),
            "2176decaecbce78abc3b96ef049fabed"
        );
        // Nested types, arrays of messages, comments and blank lines.
        let stamped = format!(
            "# a comment\nHeader header\n\ngeometry_msgs/Point[] points # trailing\n\
             {sep}\nMSG: std_msgs/Header\n{header}{sep}\nMSG: geometry_msgs/Point\n\
             float64 x\nfloat64 y\nfloat64 z\n",
            sep = "=".repeat(80)
        );
        let point = md5sum("geometry_msgs/Point", "float64 x\nfloat64 y\nfloat64 z\n").unwrap();
        assert_eq!(point, "4a842b65f413084dc2b10fb484ea7f17");
        let text = format!("2176decaecbce78abc3b96ef049fabed header\n{point} points");
        assert_eq!(
            md5sum("my_msgs/Cloud", &stamped).unwrap(),
            hex(&Md5::digest(text.as_bytes()))
        );
    }

    #[test]
    fn constants_come_first_with_their_value_text() {
        // actionlib_msgs/GoalStatus: constants, then fields (a nested GoalID).
        let def = format!(
            "GoalID goal_id\nuint8 status\nuint8 PENDING         = 0   # not yet processed\n\
             uint8 ACTIVE          = 1\nstring text\n{sep}\nMSG: actionlib_msgs/GoalID\n\
             time stamp\nstring id\n",
            sep = "=".repeat(80)
        );
        let goal_id = md5sum("actionlib_msgs/GoalID", "time stamp\nstring id\n").unwrap();
        assert_eq!(goal_id, "302881f31927c1df708a2dbab0e80ee8");
        let text = format!(
            "uint8 PENDING=0\nuint8 ACTIVE=1\n{goal_id} goal_id\nuint8 status\nstring text"
        );
        assert_eq!(
            md5sum("actionlib_msgs/GoalStatus", &def).unwrap(),
            hex(&Md5::digest(text.as_bytes()))
        );
        // A string constant keeps `#`.
        let a = md5sum("a/B", "string S=x # y\n").unwrap();
        assert_eq!(a, hex(&Md5::digest(b"string S=x # y")));
    }

    #[test]
    fn undefined_and_recursive_types_are_errors() {
        let e = md5sum("a/B", "Missing m\n").unwrap_err().to_string();
        assert!(e.contains("a/Missing is not defined"), "{e}");
        let def = format!("C c\n{}\nMSG: a/C\nB b\n", "=".repeat(80));
        let e = md5sum("a/B", &def).unwrap_err().to_string();
        assert!(e.contains("a/B -> a/C -> a/B"), "{e}");
    }
}
