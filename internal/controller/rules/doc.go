// Package rules holds the controller's rules, as KRaft's QuorumController
// and its control managers: Controller validates an admin or broker request
// against the current metadata.Image, under one lock, and turns it into
// records committed to a metadata.Log (topics, configs, broker lifecycle,
// ISR changes, leader elections, reassignments, replica placement).
//
// It depends only on package metadata; package controller (the active
// controller's duties and the broker→controller channel) and the broker's
// handlers call it.
package rules
