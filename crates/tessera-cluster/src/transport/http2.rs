//! The HTTP/2 settings both sides of a connection use: flow-control windows fixed rather than
//! adaptive, and large frames.
//!
//! A coordinator fans out many calls to one node at once, and their answers (a can_match is
//! one byte) arrive together as small DATA frames. h2 (0.4.20 on) guards against peers that
//! flood it with small frames by budgeting the unread ones at half the connection window, and
//! tears the connection down (`ENHANCE_YOUR_CALM`, "too_many_data_frames") past that. With
//! hyper's adaptive window the connection window starts at 64 KiB: about 140 small answers
//! waiting to be read were enough to kill a connection in the tests. A 16 MiB connection
//! window budgets tens of thousands of them, and still bounds what a peer may have in flight
//! unread on one connection; 4 MiB per stream lets a large answer (aggregation partials)
//! stream without waiting for window updates on a local network.

/// The connection-level receive window (the small-frame budget is half of it).
pub const CONNECTION_WINDOW: u32 = 16 << 20;

/// The per-call receive window.
pub const STREAM_WINDOW: u32 = 4 << 20;

/// The largest frame either side accepts (HTTP/2's default is 16 KiB). A large answer then
/// crosses in a few frames rather than dozens: a 1 MiB echo over loopback took ~5 ms with
/// 16 KiB frames, ~3 ms with 256 KiB, ~1 ms with 1 MiB (`examples/transport_overhead`);
/// small calls do not change. The cost is that a call's large frame delays the frames of
/// other calls on the connection for the time it takes to write it.
pub const MAX_FRAME: u32 = 1 << 20;
