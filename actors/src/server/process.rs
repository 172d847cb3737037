//! Child processes, through the platform seam (`harness9_platform::process`): process groups,
//! signals, exit statuses, and the process-wide list of live groups that the panic hook and
//! signal handlers kill as a last resort.

pub use harness9_platform::plain_io_error;
pub use harness9_platform::process::{
    describe_exit, kill_all_groups, live_group_count, register_group, signal_group, signal_name,
    unregister_group, Signal,
};
