//! Deferred structural changes recorded by parallel jobs and applied between frames.

use std::fmt;

use crossbeam::channel::{Receiver, Sender, unbounded};

use super::{Bundle, Component, Entity, Store, StoreError};

type CommandFn = Box<dyn FnOnce(&mut Store) -> Result<Option<Entity>, StoreError> + Send>;

struct Command {
    kind: &'static str,
    entity: Option<Entity>,
    type_name: Option<&'static str>,
    run: CommandFn,
}

/// A deferred command buffer: `Clone + Send + Sync`, recorded from any number of threads,
/// applied with [`Store::apply_commands`].
///
/// Order: commands are applied in the order they entered the buffer's (crossbeam, FIFO) channel.
/// Commands recorded by one thread therefore keep their recording order; commands of different
/// threads are interleaved in the order the threads pushed them (which depends on scheduling; use
/// one buffer per job, or commutative commands, where the order across threads matters).
/// Clones share the same queue.
#[derive(Clone)]
pub struct CommandBuffer {
    tx: Sender<Command>,
    rx: Receiver<Command>,
}

impl Default for CommandBuffer {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for CommandBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CommandBuffer")
            .field("pending", &self.len())
            .finish()
    }
}

impl CommandBuffer {
    /// An empty buffer.
    pub fn new() -> Self {
        let (tx, rx) = unbounded();
        Self { tx, rx }
    }

    fn push(&self, command: Command) {
        // Cannot fail: this buffer holds the receiver as long as it holds the sender.
        let _ = self.tx.send(command);
    }

    /// Records spawning an entity with `bundle` (its handle is listed in
    /// [`ApplyReport::spawned`]).
    pub fn spawn<B: Bundle>(&self, bundle: B) {
        self.push(Command {
            kind: "spawn",
            entity: None,
            type_name: Some(std::any::type_name::<B>()),
            run: Box::new(move |store| store.spawn(bundle).map(Some)),
        });
    }

    /// Records despawning `entity`.
    pub fn despawn(&self, entity: Entity) {
        self.push(Command {
            kind: "despawn",
            entity: Some(entity),
            type_name: None,
            run: Box::new(move |store| store.despawn(entity).map(|()| None)),
        });
    }

    /// Records inserting (or replacing) component `component` on `entity`.
    pub fn insert<C: Component>(&self, entity: Entity, component: C) {
        self.push(Command {
            kind: "insert",
            entity: Some(entity),
            type_name: Some(std::any::type_name::<C>()),
            run: Box::new(move |store| store.insert(entity, component).map(|()| None)),
        });
    }

    /// Records removing component `C` from `entity` (the removed value is dropped).
    pub fn remove<C: Component>(&self, entity: Entity) {
        self.push(Command {
            kind: "remove",
            entity: Some(entity),
            type_name: Some(std::any::type_name::<C>()),
            run: Box::new(move |store| store.remove::<C>(entity).map(|_| None)),
        });
    }

    /// Number of commands waiting.
    pub fn len(&self) -> usize {
        self.rx.len()
    }

    /// True if no command is waiting.
    pub fn is_empty(&self) -> bool {
        self.rx.is_empty()
    }

    /// Drops every waiting command without applying it; returns how many there were.
    pub fn clear(&self) -> usize {
        self.rx.try_iter().count()
    }

    pub(crate) fn apply(&self, store: &mut Store) -> ApplyReport {
        let mut report = ApplyReport::default();
        for (index, command) in self.rx.try_iter().enumerate() {
            report.total += 1;
            match (command.run)(store) {
                Ok(spawned) => {
                    report.applied += 1;
                    report.spawned.extend(spawned);
                }
                Err(error) => report.failures.push(CommandFailure {
                    index,
                    command: command.kind,
                    entity: command.entity,
                    type_name: command.type_name,
                    error,
                }),
            }
        }
        report
    }
}

/// What [`Store::apply_commands`] did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ApplyReport {
    /// Commands taken from the buffer.
    pub total: usize,
    /// Commands that succeeded.
    pub applied: usize,
    /// Entities created by spawn commands, in application order.
    pub spawned: Vec<Entity>,
    /// Commands that failed, in application order.
    pub failures: Vec<CommandFailure>,
}

impl ApplyReport {
    /// True if every command succeeded.
    pub fn is_ok(&self) -> bool {
        self.failures.is_empty()
    }
}

/// One failed deferred command.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandFailure {
    /// Position of the command in the applied sequence.
    pub index: usize,
    /// `"spawn"`, `"despawn"`, `"insert"` or `"remove"`.
    pub command: &'static str,
    /// The target entity (none for spawn).
    pub entity: Option<Entity>,
    /// The component or bundle type, where there is one.
    pub type_name: Option<&'static str>,
    /// Why it failed.
    pub error: StoreError,
}

impl fmt::Display for CommandFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "command #{} {}", self.index, self.command)?;
        if let Some(t) = self.type_name {
            write!(f, "<{t}>")?;
        }
        if let Some(e) = self.entity {
            write!(f, " on entity {e}")?;
        }
        write!(f, ": {}", self.error)
    }
}
